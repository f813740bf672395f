#!/usr/bin/env bash
# deploy/slurm/hpcai500.sbatch under a real Slurm: sets up a private
# single-node cluster in a scratch folder (munged with its own key and
# socket, slurmctld and slurmd in the foreground, this host as controller and
# only node), submits the Fashion-MNIST smoke benchmark with
# `sbatch --wait`, and checks the job's verdict, its output and the SQLite
# file it leaves behind. Needs root (slurmd starts jobs) and the Debian Slurm
# packages that scripts/install-deps.sh installs.
#
#   slurm_test.sh SOURCE_DIR BIN_DIR
set -euo pipefail

SOURCE_DIR="$(realpath -- "$1")"
BIN_DIR="$(realpath -- "$2")"

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

missing=()
for tool in munged slurmctld slurmd sbatch srun sinfo squeue scancel \
  scontrol; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
((${#missing[@]} == 0)) ||
  fail "${missing[*]} not installed; scripts/install-deps.sh installs them"
for binary in hpcai500d hpcai500-agent hpcai500-worker hpcai500; do
  [[ -x "$BIN_DIR/$binary" ]] || fail "$BIN_DIR/$binary not built"
done

SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/hpcai500-slurm.XXXXXX")"
HOST="$(hostname -s)"
# Ports from this process's id, so two checkouts on one host do not collide:
# slurmctld, slurmd, then the coordinator's gRPC and HTTP ports.
BASE_PORT=$((40000 + ($$ % 5000) * 4))
pids=()
job=""
passed=0

show_logs() {
  local file
  for file in "$SCRATCH"/log/* "$SCRATCH"/job-*.out \
    "$SCRATCH"/hpcai500-*/*.log; do
    [[ -f "$file" ]] || continue
    echo "----- $file (last 40 lines)"
    tail -n 40 "$file"
  done
}

# Cancels the job if it is still there, stops the daemons, and keeps the
# scratch folder (with the logs) only when the test failed.
cleanup() {
  if [[ -n "$job" ]] && squeue -h -j "$job" 2>/dev/null | grep -q .; then
    scancel "$job" || true
    sleep 5
  fi
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if ((passed)); then
    rm -rf "$SCRATCH"
  else
    show_logs
    echo "scratch folder kept: $SCRATCH"
  fi
}
trap cleanup EXIT

# Waits up to $1 seconds for the command after it to succeed.
wait_until() {
  local seconds="$1"
  shift
  for _ in $(seq "$seconds"); do
    "$@" && return 0
    sleep 1
  done
  return 1
}

mkdir -p "$SCRATCH"/{munge,state,spool,log}
chmod 755 "$SCRATCH" "$SCRATCH/munge"

# munged: a fresh key and a socket of our own.
dd if=/dev/urandom of="$SCRATCH/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$SCRATCH/munge/munge.key"
SOCKET="$SCRATCH/munge/munge.socket"
munged --foreground --force --socket="$SOCKET" \
  --key-file="$SCRATCH/munge/munge.key" \
  --pid-file="$SCRATCH/munge/munged.pid" \
  --seed-file="$SCRATCH/munge/munged.seed" \
  --log-file="$SCRATCH/log/munged.log" 2>>"$SCRATCH/log/munged.log" &
pids+=($!)
wait_until 30 test -S "$SOCKET" || fail "munged did not create $SOCKET"

# No cgroups and no accounting: a container without systemd runs this.
cat >"$SCRATCH/slurm.conf" <<EOF
ClusterName=hpcai500test
SlurmctldHost=$HOST
SlurmctldPort=$BASE_PORT
SlurmdPort=$((BASE_PORT + 1))
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCKET
StateSaveLocation=$SCRATCH/state
SlurmdSpoolDir=$SCRATCH/spool
SlurmctldPidFile=$SCRATCH/slurmctld.pid
SlurmdPidFile=$SCRATCH/slurmd.pid
SlurmctldLogFile=$SCRATCH/log/slurmctld.log
SlurmdLogFile=$SCRATCH/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
NodeName=$HOST CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$SCRATCH/slurm.conf"

slurmctld -D 2>>"$SCRATCH/log/slurmctld.log" &
pids+=($!)
slurmd -D 2>>"$SCRATCH/log/slurmd.log" &
pids+=($!)
node_idle() { [[ "$(sinfo -h -n "$HOST" -o %t 2>/dev/null)" == "idle" ]]; }
wait_until 60 node_idle || fail "node $HOST not idle in sinfo after 60 s"

# The smoke benchmark on as many ranks as the node has CPUs, up to two.
RANKS=$(($(nproc) >= 2 ? 2 : 1))
cat >"$SCRATCH/smoke.yaml" <<EOF
name: slurm-smoke
workload: image_classification
config: fashion_mnist_smoke
level: system
nodes: 1
ranks_per_node: $RANKS
device: cpu
batch_size: 64
precision: fp32
seed: 1
system: slurm-cpu
EOF

# sbatch exports this environment to the job.
export HPCAI500_BIN="$BIN_DIR"
export HPCAI500_PORT=$((BASE_PORT + 2))
export HPCAI500_HTTP="127.0.0.1:$((BASE_PORT + 3))"
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
GRPC="127.0.0.1:$((BASE_PORT + 2))"
"$BIN_DIR/hpcai500d" --grpc "$GRPC" --http "127.0.0.1:$((BASE_PORT + 3))" \
  --db "$DB" 2>>"$SCRATCH/log/hpcai500d-after.log" &
pids+=($!)
wait_until 30 "$BIN_DIR/hpcai500" --coordinator "$GRPC" nodes >/dev/null 2>&1 ||
  fail "hpcai500d did not start on $DB"
shown="$("$BIN_DIR/hpcai500" --coordinator "$GRPC" show "$run" --json)" ||
  fail "hpcai500 show $run failed on $DB"
grep -q '"RUN_STATE_SUCCEEDED"' <<<"$shown" ||
  fail "run $run is not succeeded in $DB: $shown"
grep -q '"valid_flops"' <<<"$shown" || fail "run $run has no score: $shown"

passed=1
echo "PASS: job $job ran run $run to its target; results in its SQLite file"
