#include "agent/attempt_checkpoints.h"

#include <cstdint>
#include <filesystem>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "agent/files.h"
#include "agent/internal/where.h"
#include "common/log.h"

namespace hpcai500::agent {

using agent_internal::Where;

void LinkResumeSource(const v1::AttemptKey& key, const AttemptPlan& plan) {
  if (plan.resume_source.empty()) return;
  const std::string target = absl::StrCat(
      plan.checkpoint_dir, "/",
      std::filesystem::path(plan.resume_source).filename().string());
  absl::Status linked = LinkOrCopyFile(plan.resume_source, target);
  if (linked.ok()) {
    LogInfo(absl::StrCat(Where(key), ": resuming from ", plan.resume_source));
  } else if (absl::IsNotFound(linked)) {
    LogWarning(absl::StrCat(Where(key), ": no checkpoint to resume from at ",
                            plan.resume_source, "; starting without it"));
  } else {
    LogWarning(absl::StrCat(Where(key), ": ", linked.message(),
                            "; starting without it"));
  }
}

void RemoveRunCheckpoints(const v1::AttemptKey& key,
                          const std::string& attempt_dir) {
  const std::string dir =
      std::filesystem::path(attempt_dir).parent_path().string();
  std::error_code ec;
  const std::uintmax_t removed = std::filesystem::remove_all(dir, ec);
  if (ec) {
    LogWarning(absl::StrCat(Where(key), ": cannot remove checkpoints ", dir,
                            ": ", ec.message()));
  } else if (removed > 0) {
    LogInfo(
        absl::StrCat(Where(key), ": succeeded; removed its checkpoints ", dir));
  }
}

}  // namespace hpcai500::agent
