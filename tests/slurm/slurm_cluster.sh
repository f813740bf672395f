# A private single-node Slurm for the slurm tests and bench/slurm_dispatch.sh,
# sourced (not run): munged with its own key and socket, slurmctld and slurmd
# in the foreground, this host as controller and only node (partition
# "test"), all in a scratch folder, no cgroups and no accounting (a container
# without systemd runs it). Needs root (slurmd starts jobs) and the Debian
# Slurm packages that scripts/install-deps.sh installs.
#
#   source tests/slurm/slurm_cluster.sh
#   slurm_cluster_start            # SLURM_CPUS=N: CPUs the node offers
#   ... sbatch, srun, squeue ...   # SLURM_CONF is exported
#   passed=1                       # else the scratch folder and logs stay
#
# After slurm_cluster_start: SCRATCH (the folder), HOST (the node),
# BASE_PORT (slurmctld's port; BASE_PORT+1 is slurmd's, BASE_PORT+2 and +3
# are free for the caller). Processes the caller starts in the background go
# into `pids`; the EXIT trap cancels every job, stops them and the daemons,
# and shows the logs (`slurm_log_files` adds glob patterns of more) unless
# `passed` is 1.
# shellcheck shell=bash
# Functions run from the EXIT trap look unreachable to shellcheck.
# shellcheck disable=SC2317

pids=()
passed=0
slurm_log_files=()

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

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

# Fails unless folder $1 holds the four hpcai500 binaries.
slurm_require_binaries() {
  local binary
  for binary in hpcai500d hpcai500-agent hpcai500-worker hpcai500; do
    [[ -x "$1/$binary" ]] || fail "$1/$binary not built"
  done
}

# Whether job $1 (every job without one) has left squeue.
slurm_job_gone() {
  [[ -z "$(squeue -h -o %i ${1:+-j "$1"} 2>/dev/null)" ]]
}

slurm_show_logs() {
  local file
  # The caller's entries are patterns, expanded now.
  # shellcheck disable=SC2068
  for file in "$SCRATCH"/log/* ${slurm_log_files[@]}; do
    [[ -f "$file" ]] || continue
    echo "----- $file (last 40 lines)"
    tail -n 40 "$file"
  done
}

# Cancels every job still there, stops what the caller and the set-up
# started, and keeps the scratch folder (with the logs) only when the test
# did not pass.
slurm_cluster_cleanup() {
  local pid jobs
  jobs="$(squeue -h -o %i 2>/dev/null)" || true
  if [[ -n "$jobs" ]]; then
    # shellcheck disable=SC2086
    scancel $jobs || true
    wait_until 30 slurm_job_gone || true
  fi
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if ((passed)); then
    rm -rf "$SCRATCH"
  else
    slurm_show_logs
    echo "scratch folder kept: $SCRATCH"
  fi
}

slurm_cluster_start() {
  local missing=() tool
  for tool in munged slurmctld slurmd sbatch srun sinfo squeue scancel \
    scontrol; do
    command -v "$tool" >/dev/null || missing+=("$tool")
  done
  ((${#missing[@]} == 0)) ||
    fail "${missing[*]} not installed; scripts/install-deps.sh installs them"
  ((EUID == 0)) || fail "slurmd must run as root to start jobs"

  SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/hpcai500-slurm.XXXXXX")"
  HOST="$(hostname -s)"
  # Ports from this process's id, so two checkouts on one host do not
  # collide: slurmctld, slurmd, then two for the caller.
  BASE_PORT=$((40000 + ($$ % 5000) * 4))
  trap slurm_cluster_cleanup EXIT
  mkdir -p "$SCRATCH"/{munge,state,spool,log}
  chmod 755 "$SCRATCH" "$SCRATCH/munge"

  # munged: a fresh key and a socket of our own.
  dd if=/dev/urandom of="$SCRATCH/munge/munge.key" bs=1024 count=1 \
    status=none
  chmod 400 "$SCRATCH/munge/munge.key"
  local socket="$SCRATCH/munge/munge.socket"
  munged --foreground --force --socket="$socket" \
    --key-file="$SCRATCH/munge/munge.key" \
    --pid-file="$SCRATCH/munge/munged.pid" \
    --seed-file="$SCRATCH/munge/munged.seed" \
    --log-file="$SCRATCH/log/munged.log" 2>>"$SCRATCH/log/munged.log" &
  pids+=($!)
  wait_until 30 test -S "$socket" || fail "munged did not create $socket"

  # More CPUs than the machine has (config_overrides) let jobs share it.
  local cpus="${SLURM_CPUS:-$(nproc)}"
  cat >"$SCRATCH/slurm.conf" <<EOF
ClusterName=hpcai500test
SlurmctldHost=$HOST
SlurmctldPort=$BASE_PORT
SlurmdPort=$((BASE_PORT + 1))
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
StateSaveLocation=$SCRATCH/state
SlurmdSpoolDir=$SCRATCH/spool
SlurmctldPidFile=$SCRATCH/slurmctld.pid
SlurmdPidFile=$SCRATCH/slurmd.pid
SlurmctldLogFile=$SCRATCH/log/slurmctld.log
SlurmdLogFile=$SCRATCH/log/slurmd.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
NodeName=$HOST CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
  export SLURM_CONF="$SCRATCH/slurm.conf"

  slurmctld -D 2>>"$SCRATCH/log/slurmctld.log" &
  pids+=($!)
  slurmd -D 2>>"$SCRATCH/log/slurmd.log" &
  pids+=($!)
  slurm_node_idle() {
    [[ "$(sinfo -h -n "$HOST" -o %t 2>/dev/null)" == "idle" ]]
  }
  wait_until 60 slurm_node_idle || fail "node $HOST not idle in sinfo after 60 s"
}
