# The start every slurm test driver shares, sourced (not run) with the
# driver's own arguments after `set -euo pipefail`:
#
#   source "$(dirname -- "$0")/slurm_test_prologue.sh" "$@"
#
# Takes SOURCE_DIR BIN_DIR (made absolute into those variables), sources
# slurm_cluster.sh and checks that BIN_DIR holds the hpcai500 binaries; the
# driver then calls slurm_cluster_start. Adds the helpers below.
# shellcheck shell=bash

if (($# != 2)); then
  echo "usage: $0 SOURCE_DIR BIN_DIR" >&2
  exit 2
fi
SOURCE_DIR="$(realpath -- "$1")"
BIN_DIR="$(realpath -- "$2")"
# shellcheck source=tests/slurm/slurm_cluster.sh
source "$SOURCE_DIR/tests/slurm/slurm_cluster.sh"
slurm_require_binaries "$BIN_DIR"

# Fails unless every tool named is installed.
slurm_require_tools() {
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null ||
      fail "$tool not installed (scripts/install-deps.sh)"
  done
}

# Writes to $1 the Fashion-MNIST smoke spec named $2 of system $3 (one node,
# cpu, fp32, batch 64, seed 1) with the YAML lines after them appended
# (ranks_per_node at least).
slurm_write_smoke_spec() {
  local file="$1" name="$2" system="$3"
  shift 3
  printf '%s\n' "name: $name" "workload: image_classification" \
    "config: fashion_mnist_smoke" "level: system" "nodes: 1" "device: cpu" \
    "batch_size: 64" "precision: fp32" "seed: 1" "system: $system" "$@" \
    >"$file"
}

# What sbatch exports to a deploy/slurm/hpcai500.sbatch job: the binaries
# and the coordinator's ports (BASE_PORT+2 for gRPC, +3 for HTTP).
slurm_export_job_environment() {
  export HPCAI500_BIN="$BIN_DIR"
  export HPCAI500_PORT=$((BASE_PORT + 2))
  export HPCAI500_HTTP="127.0.0.1:$((BASE_PORT + 3))"
}

# Starts hpcai500d on the SQLite file $1 a job left behind (on the job's
# ports, its log in $SCRATCH/log) and waits until it answers.
slurm_serve_database() {
  local grpc="127.0.0.1:$((BASE_PORT + 2))"
  "$BIN_DIR/hpcai500d" --grpc "$grpc" --http "127.0.0.1:$((BASE_PORT + 3))" \
    --db "$1" 2>>"$SCRATCH/log/hpcai500d-after.log" &
  pids+=($!)
  wait_until 30 "$BIN_DIR/hpcai500" --coordinator "$grpc" nodes \
    >/dev/null 2>&1 || fail "hpcai500d did not start on $1"
}
