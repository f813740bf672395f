# shellcheck shell=bash
# Sourced, not run, by the set-up scripts (install-deps.sh, build.sh,
# test.sh, demo.sh): each step runs as a phase whose output goes to one log
# file, while the screen shows one line per phase with its progress and
# elapsed time; a phase that fails shows the log's last lines (40 on a
# terminal, 200 elsewhere, such as CI) and names it.
#
#   progress_start NAME   the first script of a command calls it: the log is
#                         $HPCAI500_STATE_DIR/NAME.log (.hpcai500/NAME.log),
#                         emptied, and the scripts it calls append to it.
#                         A script called by another keeps the caller's.
#   phase TITLE CMD...    runs CMD, its output in the log; returns its status.
#                         A ninja status line ("[412/1290] ...") in its output
#                         shows as "412/1290".
#   shown CMD...          runs CMD with its output on the screen as well (the
#                         tests' report, the run's epochs), adding nothing.
#   say TEXT...           one line on the screen (and in the log).
#   say_phase TITLE TEXT  the same, in a phase's columns.
#
# HPCAI500_VERBOSE=1 shows every phase's output on the screen as well.
# The screen is file descriptor 3 of every script that sources this, opened
# by progress_start; a terminal gets one line redrawn each second, anything
# else (CI) the phase's first and last line and one a minute between.

progress_start() {
  if [[ -n "${HPCAI500_LOG:-}" ]] && { true >&3; } 2>/dev/null; then
    return 0  # called by a script that already logs: append to its log
  fi
  local root state
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  state="${HPCAI500_STATE_DIR:-$root/.hpcai500}"
  mkdir -p "$state"
  export HPCAI500_LOG="$state/$1.log"
  : >"$HPCAI500_LOG"
  exec 3>&1
  echo "(full output: ${HPCAI500_LOG#"$root"/})" >&3
}

# "42s", "3m05s", "1h02m".
progress_elapsed() {
  local s=$1
  if ((s < 60)); then
    printf '%ds' "$s"
  elif ((s < 3600)); then
    printf '%dm%02ds' $((s / 60)) $((s % 60))
  else
    printf '%dh%02dm' $((s / 3600)) $((s % 3600 / 60))
  fi
}

say() {
  echo "$*" >&3
  echo "$*" >>"$HPCAI500_LOG"
}

say_phase() {
  say "$(printf '  %-16s %s' "$1" "$2")"
}

# Reads a phase's output and draws its line: on a terminal, redrawn each
# second (read -t 1 also wakes it while the command prints nothing).
progress_follow() {
  local title=$1 start=$SECONDS count="" line="" partial="" drawn=-1 rc
  local tty=0 last_report=$SECONDS
  [[ -t 3 ]] && tty=1
  ((tty)) || printf '  %-16s ...\n' "$title" >&3
  while :; do
    rc=0
    IFS= read -r -t 1 line || rc=$?
    if ((rc > 128)); then  # timed out: keep what came of the line so far
      partial+="$line"
    else
      line="$partial$line"
      partial=""
      [[ "${HPCAI500_VERBOSE:-0}" == 1 ]] && printf '%s\n' "$line" >&3
      if [[ "$line" =~ ^\[([0-9]+/[0-9]+)\] ]]; then
        count="${BASH_REMATCH[1]}"
      fi
      ((rc == 0)) || break  # end of the output
    fi
    if ((tty && SECONDS != drawn)) && [[ "${HPCAI500_VERBOSE:-0}" != 1 ]]; then
      drawn=$SECONDS
      printf '\r\033[K  %-16s %-11s %s' "$title" "$count" \
        "$(progress_elapsed $((SECONDS - start)))" >&3
    elif ((!tty && SECONDS - last_report >= 60)); then
      last_report=$SECONDS
      printf '  %-16s %-11s %s\n' "$title" "$count" \
        "$(progress_elapsed $((SECONDS - start)))" >&3
    fi
  done
  # The caller prints the closing line: it knows the command's status.
  ((tty)) && printf '\r\033[K' >&3
  return 0
}

shown() {
  local rc=0 saved_e=0
  [[ $- == *e* ]] && saved_e=1
  set +e
  "$@" 2>&1 | tee -a "$HPCAI500_LOG" >&3
  rc=${PIPESTATUS[0]}
  ((saved_e)) && set -e
  return "$rc"
}

phase() {
  local title=$1 start=$SECONDS rc=0 saved_e=0 took
  shift
  echo "== $title: $*" >>"$HPCAI500_LOG"
  [[ $- == *e* ]] && saved_e=1
  set +e
  "$@" 2>&1 | tee -a "$HPCAI500_LOG" | progress_follow "$title"
  rc=${PIPESTATUS[0]}
  ((saved_e)) && set -e
  took="$(progress_elapsed $((SECONDS - start)))"
  if ((rc == 0)); then
    printf '  %-16s done in %s\n' "$title" "$took" >&3
    return 0
  fi
  # A terminal's reader can open the log; CI's may only have the screen.
  local lines=40
  [[ -t 3 ]] || lines=200
  {
    printf '  %-16s FAILED after %s (exit status %d); its last lines:\n' \
      "$title" "$took" "$rc"
    tail -n "$lines" "$HPCAI500_LOG" | sed 's/^/    /'
    echo "  full output: $HPCAI500_LOG"
  } >&3
  return "$rc"
}
