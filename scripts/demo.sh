#!/usr/bin/env bash
# The run command: installs what is missing, builds the four binaries it runs
# (no tests: scripts/test.sh builds those), starts hpcai500d (SQLite file
# .hpcai500/hpcai500.db) and one local agent, runs the Fashion-MNIST smoke
# benchmark on two CPU ranks, prints the leaderboard, and keeps serving the
# leaderboard page until Ctrl-C. `--once` stops everything after the demo.
# The screen shows the phases (install, configure, build N/M, start, train
# with its epochs, result) with their times; the full output is in
# .hpcai500/demo.log.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${HPCAI500_BUILD_DIR:-$ROOT/build}"
STATE="${HPCAI500_STATE_DIR:-$ROOT/.hpcai500}"
GRPC="${HPCAI500_GRPC:-127.0.0.1:7500}"
HTTP="${HPCAI500_HTTP:-127.0.0.1:7580}"
ONCE=0
[[ "${1:-}" == "--once" ]] && ONCE=1
source "$ROOT/scripts/progress.sh"
progress_start demo

# The coordinator serves the page straight from web/: nothing to build there.
"$ROOT/scripts/build.sh" hpcai500d hpcai500_agent_main hpcai500-worker hpcai500
mkdir -p "$STATE"
BIN="$BUILD/bin"

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

"$BIN/hpcai500d" --grpc "$GRPC" --http "$HTTP" --db "$STATE/hpcai500.db" \
  --web-dir "$ROOT/web" 2>>"$STATE/hpcai500d.log" &
pids+=($!)
"$BIN/hpcai500-agent" --coordinator "$GRPC" --name local --slots 2 \
  --workdir "$STATE/agent-local" 2>>"$STATE/agent-local.log" &
pids+=($!)

export HPCAI500_COORDINATOR="$GRPC"
# The coordinator answers and the agent has registered: its node is listed.
agent_registered() {
  for _ in $(seq 50); do
    if "$BIN/hpcai500" nodes 2>/dev/null | grep -q local; then
      "$BIN/hpcai500" nodes
      return 0
    fi
    sleep 0.2
  done
  echo "no node 'local' after 10 s: see $STATE/hpcai500d.log and" \
       "$STATE/agent-local.log"
  return 1
}
phase start agent_registered

say_phase train "examples/fmnist-smoke.yaml on 2 CPU ranks, its epochs:"
started=$SECONDS
set +e
shown "$BIN/hpcai500" submit "$ROOT/examples/fmnist-smoke.yaml" --wait
status=$?
set -e
outcome="done in"
((status == 0)) || outcome="FAILED (exit status $status) after"
say_phase train "$outcome $(progress_elapsed $((SECONDS - started)))"
say_phase result "the leaderboard:"
shown "$BIN/hpcai500" leaderboard
say "logs: $HPCAI500_LOG, $STATE/hpcai500d.log, $STATE/agent-local.log"
if ((ONCE)); then
  exit "$status"
fi
say "leaderboard: http://$HTTP/   (Ctrl-C stops the coordinator and agent)"
wait
