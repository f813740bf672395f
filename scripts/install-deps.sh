#!/usr/bin/env bash
# Installs the Debian packages hpcai500 builds, runs and tests with, and the
# Python packages of scripts/requirements.txt (torch with the LibTorch the
# worker builds against, NVIDIA's CUDA 13.0 compiler wheels, torchvision,
# mlperf-logging, playwright) into the checkout's virtual environment .venv,
# with .venv/cuda, a CUDA toolkit folder made of links into those wheels.
# Safe to run twice: it only calls apt-get for packages that are missing,
# and pip only when scripts/requirements.txt changed since the last install.
# Their output goes to the log scripts/progress.sh names.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  # A compiler cache: a second build of the same sources (CI after a
  # session, a rebuild after git pull) takes minutes instead of twenty.
  ccache
  # CLI11: the one flag library of hpcai500d, the agent and the CLI.
  libcli11-dev
  # The virtual environment of scripts/requirements.txt. LibTorch comes from
  # torch's wheel, which lacks the Gloo headers its ProcessGroupGloo.hpp
  # includes: libgloo-dev has them.
  python3 python3-venv libgloo-dev zlib1g-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libboost-dev libsqlite3-dev nlohmann-json3-dev libyaml-cpp-dev
  libgtest-dev libgmock-dev
  # The fuzz targets (scripts/fuzz.sh): clang with libFuzzer and the
  # sanitizer runtimes.
  clang-14 libclang-rt-14-dev
  dataset-fashion-mnist
  libturbojpeg0-dev libhdf5-dev
  # The browser tests drive it through Playwright's Python API.
  chromium
  # node --test runs the web pages' unit tests (web/*.test.js).
  nodejs
  # The slurm-labelled test runs deploy/slurm/hpcai500.sbatch under a
  # private single-node Slurm: controller, node daemon, sbatch/srun and
  # MUNGE authentication. The slurm tests read the CLI's JSON with jq and
  # count stored events with sqlite3.
  slurmctld slurmd slurm-client munge jq sqlite3
  procps curl
  # OpenSSL: TLS (hpcai500d --tls-cert, HTTPS through boost::asio::ssl) and
  # API tokens checked as keyed hashes (HMAC-SHA256); the tests make
  # throw-away certificates with the openssl command.
  libssl-dev openssl
  # The netns tests (tests/netns): network namespaces, veth pairs and a
  # bridge made with ip.
  iproute2
  # launcher: mpirun (Debian's OpenMPI) and its tests on loopback and in
  # the netns lab (skipped without it).
  openmpi-bin
)

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/scripts/progress.sh"
progress_start install-deps

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
    missing+=("$p")
  fi
done
apt_install() {
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then sudo=(sudo); fi
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -q
  "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
}
if ((${#missing[@]} > 0)); then
  # sudo may ask for a password: on the screen, before the quiet phase.
  if [[ $(id -u) -ne 0 ]]; then sudo -v <&0 >&3 2>&3; fi
  phase "install (apt)" apt_install
fi

# The virtual environment: torch (and the LibTorch in it) pinned in one place.
VENV="$ROOT/.venv"
REQUIREMENTS="$ROOT/scripts/requirements.txt"
STAMP="$VENV/.installed-requirements.txt"
pip_install() {
  [[ -x "$VENV/bin/python3" ]] || python3 -m venv "$VENV"
  "$VENV/bin/python3" -m pip install --disable-pip-version-check \
    --progress-bar off -r "$REQUIREMENTS"
  cp "$REQUIREMENTS" "$STAMP"
}
if ! cmp -s "$REQUIREMENTS" "$STAMP"; then
  phase "install (pip)" pip_install
fi

# LibTorch's CMake package needs the CUDA 13.0 toolkit its wheel was built
# for (nvcc, the runtime's headers and libraries), and so does worker/kernels.
# NVIDIA's wheels in scripts/requirements.txt hold it in pip's layout;
# scripts/cuda-view.sh links them into .venv/cuda, a toolkit folder.
# cmake/CudaToolkit.cmake uses it where no other toolkit is found ($CUDA_HOME,
# nvcc on PATH and /usr/local/cuda come first).
if [[ ! -x "$VENV/cuda/bin/nvcc" || "$STAMP" -nt "$VENV/cuda" ]]; then
  phase "install (cuda)" "$ROOT/scripts/cuda-view.sh" "$VENV"
fi
