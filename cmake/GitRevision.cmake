# HPCAI500_GIT_REVISION: the checkout's short git revision at configure time,
# or "unknown" outside a git checkout (a container build, whose context
# leaves .git out). `--version` of every binary prints it (common/version.h,
# worker/version.h), compiled into those files only so a new commit does not
# rebuild the rest.
execute_process(
  COMMAND git -C ${PROJECT_SOURCE_DIR} rev-parse --short=12 HEAD
  OUTPUT_VARIABLE HPCAI500_GIT_REVISION
  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE git_failed)
if(git_failed OR NOT HPCAI500_GIT_REVISION)
  set(HPCAI500_GIT_REVISION unknown)
endif()
