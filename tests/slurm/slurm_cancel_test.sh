#!/usr/bin/env bash
# scancel of a deploy/slurm/hpcai500.sbatch job under a real Slurm
# (tests/slurm/slurm_cluster.sh): once the job's run is training, `scancel`
# sends TERM to every process of the job at once; the run must be recorded
# cancelled, not failed, in the SQLite file the job leaves behind.
#
#   slurm_cancel_test.sh SOURCE_DIR BIN_DIR
set -euo pipefail

# shellcheck source=tests/slurm/slurm_test_prologue.sh
source "$(dirname -- "$0")/slurm_test_prologue.sh" "$@"
slurm_require_tools jq
slurm_cluster_start
slurm_log_files=("$SCRATCH/job-*.out" "$SCRATCH/hpcai500-*/*.log")

slurm_write_smoke_spec "$SCRATCH/smoke.yaml" slurm-cancel slurm-cpu \
  "ranks_per_node: 1" "epochs: 1"

slurm_export_job_environment
# The run must still be training when scancel comes, however fast this
# machine's LibTorch trains the one smoke epoch (1.5 s with torch 2.11 on two
# cores): the agent passes the test-only slowdown on to its worker, whose
# steps then take 11 times as long (worker/test_slowdown.h).
export HPCAI500_TEST_SLOW_STEP_PCT=1000
export HPCAI500_AGENT_ARGS="--env HPCAI500_TEST_SLOW_STEP_PCT"
job="$(cd "$SCRATCH" && sbatch --parsable -N1 --time=8 \
  --output="$SCRATCH/job-%j.out" \
  "$SOURCE_DIR/deploy/slurm/hpcai500.sbatch" smoke.yaml)" || fail "sbatch failed"
job="${job%%;*}"
OUT="$SCRATCH/job-$job.out"
STATE="$SCRATCH/hpcai500-$job"
GRPC="127.0.0.1:$HPCAI500_PORT"

# The job's coordinator, reached with the job's own token while it runs.
cli() {
  "$BIN_DIR/hpcai500" --coordinator "$GRPC" --token-file "$STATE/token-$job" \
    "$@"
}
training() {
  [[ -f "$STATE/token-$job" ]] || return 1
  cli list 2>/dev/null | awk 'NR > 1 && $4 == "running" { found = 1 }
    END { exit !found }' || return 1
  # The worker wrote its first lines: it is training, not starting.
  compgen -G "$STATE/agent-$HOST/runs/*/attempt-1/rank-0.events" >/dev/null
}
wait_until 300 training || fail "the job's run did not start training"
run="$(cli list | awk 'NR > 1 && $4 == "running" { print $1; exit }')"
sleep 2

scancel "$job"
wait_until 60 slurm_job_gone "$job" ||
  fail "job $job still there 60 s after scancel"
grep -q "cancelling run $run" "$OUT" || fail "the job did not cancel run $run"
[[ ! -e "$STATE/token-$job" ]] || fail "the job left its token file behind"

# Read back from the job's database.
DB="$STATE/hpcai500.db"
slurm_serve_database "$DB"
state="$("$BIN_DIR/hpcai500" --coordinator "$GRPC" show "$run" --json |
  jq -r .state)"
[[ "$state" == "RUN_STATE_CANCELLED" ]] ||
  fail "run $run is $state after scancel, expected RUN_STATE_CANCELLED"

passed=1
echo "PASS: scancel of job $job recorded run $run as cancelled"
