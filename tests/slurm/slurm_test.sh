#!/usr/bin/env bash
# deploy/slurm/hpcai500.sbatch under a real Slurm: sets up a private
# single-node cluster in a scratch folder (tests/slurm/slurm_cluster.sh),
# submits the Fashion-MNIST smoke benchmark with
# `sbatch --wait`, and checks the job's verdict, its output and the SQLite
# file it leaves behind. Needs root (slurmd starts jobs) and the Debian Slurm
# packages that scripts/install-deps.sh installs.
#
#   slurm_test.sh SOURCE_DIR BIN_DIR
set -euo pipefail

# shellcheck source=tests/slurm/slurm_test_prologue.sh
source "$(dirname -- "$0")/slurm_test_prologue.sh" "$@"
slurm_cluster_start
slurm_log_files=("$SCRATCH/job-*.out" "$SCRATCH/hpcai500-*/*.log")

# The smoke benchmark on as many ranks as the node has CPUs, up to two.
RANKS=$(($(nproc) >= 2 ? 2 : 1))
slurm_write_smoke_spec "$SCRATCH/smoke.yaml" slurm-smoke slurm-cpu \
  "ranks_per_node: $RANKS"

slurm_export_job_environment
status=0
job="$(cd "$SCRATCH" && sbatch --parsable --wait -N1 --time=8 \
  --output="$SCRATCH/job-%j.out" \
  "$SOURCE_DIR/deploy/slurm/hpcai500.sbatch" smoke.yaml)" || status=$?
job="${job%%;*}"
[[ -n "$job" ]] || fail "sbatch printed no job id"
OUT="$SCRATCH/job-$job.out"
STATE="$SCRATCH/hpcai500-$job"

# A smoke run reaches its target: the job exits 0 and says so.
((status == 0)) || fail "sbatch --wait exited $status, expected 0"
run="$(sed -nE 's/^run ([0-9]+) succeeded$/\1/p' "$OUT")"
[[ -n "$run" ]] || fail "no 'run N succeeded' line in $OUT"
grep -q "Valid FLOPS" "$OUT" || fail "no Valid FLOPS in $OUT"
grep -q "submit exited 0" "$OUT" || fail "no verdict line in $OUT"
# The agents were stopped cleanly (INT), not killed with the step.
grep -q "stopping" "$STATE/agent-$HOST.log" ||
  fail "agent on $HOST did not log a clean stop"
[[ ! -e "$STATE/token-$job" ]] || fail "the job left its token file behind"

# The SQLite file outlives the job: a new coordinator reads the run from it.
DB="$STATE/hpcai500.db"
[[ -s "$DB" ]] || fail "$DB missing or empty"
slurm_serve_database "$DB"
GRPC="127.0.0.1:$HPCAI500_PORT"
shown="$("$BIN_DIR/hpcai500" --coordinator "$GRPC" show "$run" --json)" ||
  fail "hpcai500 show $run failed on $DB"
grep -q '"RUN_STATE_SUCCEEDED"' <<<"$shown" ||
  fail "run $run is not succeeded in $DB: $shown"
grep -q '"valid_flops"' <<<"$shown" || fail "run $run has no score: $shown"

passed=1
echo "PASS: job $job ran run $run to its target; results in its SQLite file"
