#!/usr/bin/env bash
# Installs the Debian packages hpcai500 builds, runs and tests with, and the
# npm packages of the browser tests (web/package-lock.json). Safe to run
# twice: it only calls apt-get for packages that are missing, and npm ci only
# when the lock file changed since the last install.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  # A compiler cache: a second build of the same sources (CI after a
  # session, a rebuild after git pull) takes minutes instead of twenty.
  ccache
  # CLI11: the one flag library of hpcai500d, the agent and the CLI.
  libcli11-dev
  libtorch-dev libgloo-dev zlib1g-dev
  # Debian's LibTorch calls the system BLAS for matrix products (linear
  # layers): without this the reference BLAS, single-threaded and several
  # times slower. The OpenMP build follows torch's thread count.
  libopenblas0-openmp
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libboost-dev libsqlite3-dev nlohmann-json3-dev libyaml-cpp-dev
  libgtest-dev libgmock-dev
  # The fuzz targets (scripts/fuzz.sh): clang with libFuzzer and the
  # sanitizer runtimes.
  clang-14 libclang-rt-14-dev
  dataset-fashion-mnist
  libturbojpeg0-dev python3-torch python3-torchvision libhdf5-dev
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
# npm ci below needs npm: Debian's nodejs ships without it (package npm),
# while other builds of nodejs (NodeSource's) bring their own and conflict
# with Debian's npm package, so ask for it only when the command is missing.
if ! command -v npm >/dev/null; then
  missing+=(npm)
fi
if ((${#missing[@]} > 0)); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# playwright-core drives Debian's chromium in the browser tests
# (tests/web/pages.browser.mjs); it downloads no browser of its own.
WEB="$(cd "$(dirname "$0")/../web" && pwd)"
STAMP="$WEB/node_modules/.installed-package-lock.json"
if ! cmp -s "$WEB/package-lock.json" "$STAMP"; then
  echo "install-deps: npm ci in web/"
  (cd "$WEB" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$WEB/package-lock.json" "$STAMP"
fi
