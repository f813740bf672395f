#!/usr/bin/env bash
# Installs the Debian packages hpcai500 builds, runs and tests with, and the
# Python packages of scripts/requirements.txt (torch with the LibTorch the
# worker builds against, torchvision, mlperf-logging, playwright) into the
# checkout's virtual environment .venv. Safe to run twice: it only calls
# apt-get for packages that are missing, and pip only when
# scripts/requirements.txt changed since the last install.
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

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} > 0)); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# LibTorch's CMake package needs the CUDA toolkit its wheel was built for
# (13.0: nvcc, the runtime's headers); the build machines carry it, in
# /usr/local/cuda unless CUDA_HOME or nvcc on PATH says otherwise.
if ! command -v nvcc >/dev/null && [[ ! -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ]]; then
  echo "install-deps: no CUDA toolkit (nvcc): LibTorch's CMake package needs" \
       "CUDA 13.0's (see README, 'Set-up'); set CUDA_HOME to it" >&2
  exit 1
fi

# The virtual environment: torch (and the LibTorch in it) pinned in one place.
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="$ROOT/.venv"
REQUIREMENTS="$ROOT/scripts/requirements.txt"
STAMP="$VENV/.installed-requirements.txt"
if ! cmp -s "$REQUIREMENTS" "$STAMP"; then
  echo "install-deps: pip install -r scripts/requirements.txt into .venv"
  [[ -x "$VENV/bin/python3" ]] || python3 -m venv "$VENV"
  "$VENV/bin/python3" -m pip install -q --disable-pip-version-check \
    -r "$REQUIREMENTS"
  cp "$REQUIREMENTS" "$STAMP"
fi
