#!/usr/bin/env bash
# Dispatch of `noop` runs: hpcai500 (hpcai500d and one local agent) against
# the same worker binary run as Slurm jobs (`sbatch --wrap` and `srun`) on
# this machine's private Slurm (tests/slurm/slurm_cluster.sh), in one run:
# submit -> start latency p50/p99 and runs per second for each (issue 14).
# Needs root and the Slurm packages, like the slurm tests.
#
#   bench/dispatch.sh [--bin-dir build/bin] [--runs 1000] [--latency-runs 100]
#                     [--slots 8] [--clients 8]
#
# --slots: the agent's slots and the Slurm node's CPUs (jobs at once on
# either side); --clients: client processes submitting at once in the
# throughput phase (hpcai500 submit, sbatch, srun; each srun waits for its
# job). Everything else is bench/dispatch.py's (bench/README.md, section 9).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN_DIR="$ROOT/build/bin"
SLOTS=8
ARGS=()
while (($# > 0)); do
  case "$1" in
  --bin-dir)
    BIN_DIR="$(realpath -- "$2")"
    shift 2
    ;;
  --slots)
    SLOTS="$2"
    ARGS+=("$1" "$2")
    shift 2
    ;;
  *)
    ARGS+=("$1")
    shift
    ;;
  esac
done
[[ "$SLOTS" =~ ^[1-9][0-9]*$ ]] || {
  echo "dispatch.sh: --slots must be a positive integer, got '$SLOTS'" >&2
  exit 64
}

# shellcheck source=tests/slurm/slurm_cluster.sh
source "$ROOT/tests/slurm/slurm_cluster.sh"
slurm_require_binaries "$BIN_DIR"
SLURM_CPUS="$SLOTS" slurm_cluster_start
slurm_log_files=("$SCRATCH/hpcai500d.log" "$SCRATCH/agent.log")

# hpcai500 on loopback, no auth (nothing leaves the host): the coordinator
# and one agent with as many slots as the Slurm node has CPUs.
GRPC="127.0.0.1:$((BASE_PORT + 2))"
"$BIN_DIR/hpcai500d" --grpc "$GRPC" --http "127.0.0.1:$((BASE_PORT + 3))" \
  --db "$SCRATCH/hpcai500.db" --max-queued-per-user 0 \
  2>>"$SCRATCH/hpcai500d.log" &
pids+=($!)
wait_until 30 "$BIN_DIR/hpcai500" --coordinator "$GRPC" nodes >/dev/null 2>&1 ||
  fail "hpcai500d did not start"
"$BIN_DIR/hpcai500-agent" --coordinator "$GRPC" --name bench-node \
  --slots "$SLOTS" --workdir "$SCRATCH/agent" 2>>"$SCRATCH/agent.log" &
pids+=($!)
agent_idle() {
  "$BIN_DIR/hpcai500" --coordinator "$GRPC" nodes 2>/dev/null |
    awk '$1 == "bench-node" && $6 == "idle" { found = 1 } END { exit !found }'
}
wait_until 30 agent_idle || fail "the agent did not register"

echo "# $0 ${ARGS[*]} (bin $BIN_DIR)"
echo "# $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg) at start;" \
  "slurm $(sinfo --version | cut -d' ' -f2)"
python3 "$ROOT/bench/dispatch.py" --bin-dir "$BIN_DIR" --coordinator "$GRPC" \
  --db "$SCRATCH/hpcai500.db" --scratch "$SCRATCH" "${ARGS[@]}"
echo "# load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
passed=1
