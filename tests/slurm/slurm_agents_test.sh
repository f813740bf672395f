#!/usr/bin/env bash
# deploy/slurm/agents.sbatch under a real Slurm (tests/slurm/slurm_cluster.sh):
# a long-lived hpcai500d outside Slurm; `sbatch agents.sbatch` brings a pilot
# agent up, named NODE-JOBID and labelled with the job id and partition; a
# run completes on it, then one with `launcher: srun` as a job step of the
# allocation. Then a second allocation, a run on the first one and
# `scancel` of the first allocation: its agent leaves cleanly (well before
# the node timeout), the run's attempt 2 runs on the second allocation and
# succeeds, and no event of attempt 1 is lost or stored twice.
#
#   slurm_agents_test.sh SOURCE_DIR BIN_DIR
set -euo pipefail

# shellcheck source=tests/slurm/slurm_test_prologue.sh
source "$(dirname -- "$0")/slurm_test_prologue.sh" "$@"
slurm_require_tools jq sqlite3
# Two 1-CPU allocations side by side, whatever the machine has.
SLURM_CPUS=4 slurm_cluster_start
slurm_log_files=("$SCRATCH/hpcai500d.log" "$SCRATCH/agents-*.out"
  "$SCRATCH/hpcai500-agents-*/*.log")

# The coordinator, outside Slurm, with a node timeout long enough that a
# new attempt within it can only come from the agent leaving.
NODE_TIMEOUT_S=300
GRPC="127.0.0.1:$((BASE_PORT + 2))"
TOKEN="$SCRATCH/token"
(
  umask 077
  od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$TOKEN"
)
"$BIN_DIR/hpcai500d" --grpc "$GRPC" --http "127.0.0.1:$((BASE_PORT + 3))" \
  --db "$SCRATCH/hpcai500.db" --token-file "$TOKEN" \
  --node-timeout-s "$NODE_TIMEOUT_S" 2>>"$SCRATCH/hpcai500d.log" &
pids+=($!)
cli() { "$BIN_DIR/hpcai500" --coordinator "$GRPC" --token-file "$TOKEN" "$@"; }
wait_until 30 cli nodes >/dev/null 2>&1 || fail "hpcai500d did not start"

# sbatch exports this environment to the jobs.
export HPCAI500_BIN="$BIN_DIR" HPCAI500_COORDINATOR="$GRPC"
export HPCAI500_TOKEN_FILE="$TOKEN"
# allocate [AGENT FLAGS]: a new allocation with its pilot agent.
allocate() {
  local job
  job="$(cd "$SCRATCH" && sbatch --parsable -N1 -n1 -c1 --time=30 \
    --output="$SCRATCH/agents-%j.out" \
    "$SOURCE_DIR/deploy/slurm/agents.sbatch" "$@")" || fail "sbatch failed"
  echo "${job%%;*}"
}
node_field() { cli nodes --json | jq -r --arg n "$1" \
  "(.nodes // [])[] | select(.name == \$n) | $2"; }
node_idle() { [[ "$(node_field "$1" .state 2>/dev/null)" == "idle" ]]; }
run_field() { cli show "$1" --json | jq -r "$2"; }
run_state() { run_field "$1" .state 2>/dev/null; }
run_ended() {
  case "$(run_state "$1")" in
  RUN_STATE_SUCCEEDED | RUN_STATE_FAILED | RUN_STATE_CANCELLED) return 0 ;;
  esac
  return 1
}
stored_key() {
  sqlite3 "$SCRATCH/hpcai500.db" "SELECT COUNT(*) FROM events WHERE \
    run_id = $1 AND attempt = $2 AND line LIKE '%\"key\": \"$3\"%'"
}

slurm_write_smoke_spec "$SCRATCH/smoke.yaml" pilot-smoke slurm-pilot \
  "ranks_per_node: 1" "epochs: 1"

# 1. An allocation's agent registers, named and labelled after its job. Its
# workers' steps take 11 times as long (the test-only slowdown its agent passes
# on, worker/test_slowdown.h), so that the run scancel interrupts in step 4 is
# still training then, however fast this machine's LibTorch is.
export HPCAI500_TEST_SLOW_STEP_PCT=1000
job1="$(allocate --env HPCAI500_TEST_SLOW_STEP_PCT)"
node1="$HOST-$job1"
wait_until 90 node_idle "$node1" ||
  fail "no idle node $node1 after sbatch agents.sbatch (job $job1)"
[[ "$(node_field "$node1" '.labels.slurm_job')" == "$job1" ]] ||
  fail "node $node1 lacks label slurm_job=$job1"
[[ "$(node_field "$node1" '.labels.partition')" == "test" ]] ||
  fail "node $node1 lacks label partition=test"

# 2. A run completes on it.
status=0
cli submit "$SCRATCH/smoke.yaml" --wait >"$SCRATCH/run1.out" 2>&1 || status=$?
((status == 0)) || fail "first run: submit --wait exited $status"
run1="$(sed -nE 's/^run ([0-9]+) succeeded$/\1/p' "$SCRATCH/run1.out")"
[[ -n "$run1" ]] || fail "no 'run N succeeded' in $(cat "$SCRATCH/run1.out")"
[[ "$(run_field "$run1" '.attempts[0].nodes[0]')" == "$node1" ]] ||
  fail "run $run1 did not run on $node1"

# 2b. launcher: srun: rank 0's agent runs the ranks as one job step of the
# allocation, naming the node by its slurm_node label (Slurm's node name, not
# the agent's NODE-JOBID); squeue lists the step while it runs.
[[ "$(node_field "$node1" '.labels.slurm_node')" == "$HOST" ]] ||
  fail "node $node1 lacks label slurm_node=$HOST"
slurm_write_smoke_spec "$SCRATCH/srun.yaml" pilot-srun slurm-pilot \
  "ranks_per_node: 1" "epochs: 1" "launcher: srun"
run_srun="$(cli submit "$SCRATCH/srun.yaml" | tail -n 1)"
[[ "$run_srun" =~ ^[0-9]+$ ]] || fail "submit printed no run id: $run_srun"
steps_seen=""
srun_polled() {
  steps_seen+=" $(squeue -h --steps -j "$job1" -o %j 2>/dev/null | tr '\n' ' ')"
  run_ended "$run_srun"
}
wait_until 300 srun_polled || fail "launcher: srun run $run_srun did not end"
[[ "$(run_state "$run_srun")" == "RUN_STATE_SUCCEEDED" ]] ||
  fail "launcher: srun run $run_srun ended $(run_state "$run_srun"):" \
    "$(run_field "$run_srun" .error)"
[[ "$steps_seen" == *"hpcai500-run-$run_srun"* ]] ||
  fail "squeue --steps never listed hpcai500-run-$run_srun (saw:$steps_seen)"

# 3. A second allocation, held back (drained) while the next run is placed
# on the first one.
job2="$(allocate)"
node2="$HOST-$job2"
wait_until 90 node_idle "$node2" || fail "no idle node $node2 (job $job2)"
cli drain "$node2" --reason "until job $job1 is cancelled" >/dev/null
run2="$(cli submit "$SCRATCH/smoke.yaml" | tail -n 1)"
[[ "$run2" =~ ^[0-9]+$ ]] || fail "submit printed no run id: $run2"
run2_started() { (($(stored_key "$run2" 1 run_start) >= 1)); }
wait_until 300 run2_started ||
  fail "run $run2 did not start on $node1"
[[ "$(run_field "$run2" '.attempts[0].nodes[0]')" == "$node1" ]] ||
  fail "run $run2 attempt 1 is not on $node1"
cli resume "$node2" >/dev/null
sleep 2 # a few more events in flight

# 4. scancel of the first allocation: its agent leaves, the run gets
# attempt 2 on the second allocation at once, not after the node timeout.
cancelled_at=$SECONDS
scancel "$job1"
has_attempt_2() { [[ "$(run_field "$run2" '.attempts | length')" -ge 2 ]]; }
wait_until 60 has_attempt_2 || fail "run $run2 got no attempt 2 within 60 s"
new_attempt_s=$((SECONDS - cancelled_at))
((new_attempt_s < NODE_TIMEOUT_S / 2)) ||
  fail "attempt 2 came after $new_attempt_s s: the node timed out"
error1="$(run_field "$run2" '.attempts[0].error')"
[[ "$error1" == *"node $node1 left (agent stopped by SIGTERM)"* ]] ||
  fail "attempt 1 ended '$error1', expected node $node1 left"
[[ "$(run_field "$run2" '.attempts[1].nodes[0]')" == "$node2" ]] ||
  fail "attempt 2 is not on $node2"
wait_until 60 slurm_job_gone "$job1" ||
  fail "job $job1 still there 60 s after scancel"
agent1_log="$SCRATCH/hpcai500-agents-$job1/agent-$node1.log"
grep -q "left: every worker stopped, everything delivered" "$agent1_log" ||
  fail "agent $node1 did not leave cleanly (see $agent1_log)"
[[ "$(node_field "$node1" .state_reason)" == "left: agent stopped by SIGTERM" ]] ||
  fail "node $node1 is $(node_field "$node1" '.state + ": " + .state_reason')"

wait_until 300 run_ended "$run2" || fail "run $run2 did not end"
[[ "$(run_state "$run2")" == "RUN_STATE_SUCCEEDED" ]] ||
  fail "run $run2 ended $(run_state "$run2"): $(run_field "$run2" .error)"

# 5. Nothing lost: every line attempt 1's worker wrote on node1 is stored
# once, and no event of the run is stored twice.
events1="$SCRATCH/hpcai500-agents-$job1/agent-$node1/runs/$run2/attempt-1/rank-0.events"
[[ -f "$events1" ]] || fail "$events1 missing (the leaving agent removed it?)"
written="$(wc -l <"$events1")"
stored="$(sqlite3 "$SCRATCH/hpcai500.db" "SELECT COUNT(DISTINCT seq) FROM \
  events WHERE run_id = $run2 AND attempt = 1 AND rank = 0")"
twice="$(sqlite3 "$SCRATCH/hpcai500.db" "SELECT COUNT(*) - COUNT(DISTINCT \
  attempt || '/' || rank || '/' || seq) FROM events WHERE run_id = $run2")"
((written > 0 && stored == written)) ||
  fail "attempt 1 wrote $written events, $stored stored"
((twice == 0)) || fail "$twice events of run $run2 stored twice"

passed=1
echo "PASS: pilot agents of jobs $job1 and $job2: run $run1 on $node1;" \
  "run $run2's attempt 2 on $node2 ${new_attempt_s} s after scancel" \
  "$job1, succeeded; attempt 1: $written events written, $stored stored," \
  "$twice twice"
