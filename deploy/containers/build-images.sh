#!/usr/bin/env bash
# Builds the three images of deploy/containers with buildah and runs them:
#   1. a Debian 12 base image made here by mmdebstrap from Debian's packages
#      (no registry: localhost/hpcai500-base:debian12, and :debian12-slim
#      for the coordinator's runtime stage), made once and then reused;
#   2. hpcai500d, hpcai500-worker and hpcai500-agent from their Dockerfiles,
#      with the base images passed as build arguments (the worker's CUDA
#      LibTorch and compiler come from PyPI, so no CUDA image is needed);
#   3. each binary's --version inside its image;
#   4. a short demo across the images: hpcai500d in the coordinator image,
#      two agents in the agent image (all on the host's loopback), a noop
#      run over both nodes and the Fashion-MNIST smoke run on two CPU ranks
#      (the host's /usr/share/datasets/fashion-mnist mounted read-only, as a
#      cluster mounts its datasets), then the leaderboard.
# Commands run in the images with `buildah run --isolation chroot`, which
# needs no container runtime. Run as root (or give buildah rootless
# storage); buildah and mmdebstrap are installed when missing.
#
#   deploy/containers/build-images.sh           # build, check, demo
#   deploy/containers/build-images.sh --build   # build and --version only
#
# ctest runs it as the test `container_images` (label container), which the
# README's test command leaves out: from nothing it takes about an hour on
# two cores (docs/design.md, "Container images"); `ctest -L container` runs
# it. A rebuild of the same sources takes minutes: buildah keeps each step's
# layer (--layers) and the compilers' ccache lives in a cache mount.
# Everything it prints goes to .hpcai500/containers.log as well.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/progress.sh"
progress_start containers
DEMO=1
case "${1:-}" in
  --build) DEMO=0 ;;
  "") ;;
  *)
    echo "usage: build-images.sh [--build]" >&2
    exit 64
    ;;
esac

PREFIX="${HPCAI500_IMAGE_PREFIX:-localhost}"
BASE="$PREFIX/hpcai500-base:debian12"
COORDINATOR="$PREFIX/hpcai500d:dev"
WORKER="$PREFIX/hpcai500-worker:dev"
AGENT="$PREFIX/hpcai500-agent:dev"
SUDO=()
if [[ $(id -u) -ne 0 ]]; then SUDO=(sudo); fi

install_tools() {
  DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -q \
    --no-install-recommends buildah mmdebstrap
}
if ! command -v buildah >/dev/null || ! command -v mmdebstrap >/dev/null; then
  phase "install (apt)" install_tools
fi

# The base: Debian 12's minimal system (apt, no recommends), with the
# security and point-release updates, as a one-layer image.
make_base() {
  local tmp ctr
  tmp="$(mktemp -d)"
  mmdebstrap --variant=minbase --include=ca-certificates bookworm \
    "$tmp/rootfs.tar" \
    "deb http://deb.debian.org/debian bookworm main" \
    "deb http://deb.debian.org/debian bookworm-updates main" \
    "deb http://deb.debian.org/debian-security bookworm-security main"
  ctr="$(buildah from scratch)"
  buildah add "$ctr" "$tmp/rootfs.tar" /
  buildah config --cmd /bin/bash \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --label org.opencontainers.image.title=hpcai500-base "$ctr"
  buildah commit --rm "$ctr" "$BASE"
  buildah tag "$BASE" "$BASE-slim"
  rm -rf "$tmp"
}
if ! buildah inspect --type image "$BASE" >/dev/null 2>&1; then
  phase "base image" make_base
else
  say_phase "base image" "$BASE (made earlier; buildah rmi it to remake)"
fi

build_image() {
  local file=$1 tag=$2
  shift 2
  # Docker's image format: OCI's has no SHELL (the worker's pipefail) and
  # no HEALTHCHECK (the coordinator's probe), which buildah would drop.
  buildah build --isolation chroot --layers --format docker \
    -f "$ROOT/deploy/containers/$file" -t "$tag" "$@" "$ROOT"
}
phase "image hpcai500d" build_image coordinator.Dockerfile "$COORDINATOR" \
  --build-arg "DEBIAN_IMAGE=$BASE"
# pip in the worker's build stage trusts the CA bundle pip or OpenSSL is
# told to trust here (a TLS-inspecting proxy's).
worker_args=(--build-arg "BASE_IMAGE=$BASE")
for cert in "${PIP_CERT:-}" "${SSL_CERT_FILE:-}" "${REQUESTS_CA_BUNDLE:-}"; do
  if [[ -n $cert && -s $cert ]]; then
    worker_args+=(--secret "id=pip_cert,src=$cert")
    break
  fi
done
phase "image worker" build_image worker.Dockerfile "$WORKER" "${worker_args[@]}"
phase "image agent" build_image agent.Dockerfile "$AGENT" \
  --build-arg "WORKER_IMAGE=$WORKER" --build-arg "BUILD_IMAGE=$BASE"

# Containers of the images, removed on exit with every process they ran.
containers=()
groups=()
cleanup() {
  local group
  for group in "${groups[@]}"; do kill -- "-$group" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if ((${#containers[@]} > 0)); then
    buildah rm "${containers[@]}" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT INT TERM
container_of() {
  local ctr
  ctr="$(buildah from "$@")"
  containers+=("$ctr")
  echo "$ctr"
}
coordinator_ctr="$(container_of "$COORDINATOR")"
agent_ctr="$(container_of "$AGENT")"
worker_ctr="$(container_of "$WORKER")"
run_in() {  # run_in CONTAINER COMMAND...
  local ctr=$1
  shift
  buildah run --isolation chroot "$ctr" -- "$@"
}
versions() {
  run_in "$coordinator_ctr" hpcai500d --version
  run_in "$coordinator_ctr" hpcai500 --version
  run_in "$agent_ctr" hpcai500-agent --version
  run_in "$agent_ctr" hpcai500 --version
  run_in "$agent_ctr" hpcai500-worker --version
  run_in "$worker_ctr" hpcai500-worker --version
}
say_phase "--version" "each binary in its image:"
shown versions
((DEMO)) || exit 0

# The demo. Ports the host has free; folders owned by the images' user
# (uid 10001), as a volume would be.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
GRPC="127.0.0.1:$(free_port)"
HTTP="127.0.0.1:$(free_port)"
STATE="$(mktemp -d)"
mkdir -p "$STATE/db" "$STATE/agent-a" "$STATE/agent-b" "$STATE/specs"
cp "$ROOT/examples/noop.yaml" "$ROOT/examples/fmnist-smoke.yaml" "$STATE/specs/"
chown -R 10001:10001 "$STATE/db" "$STATE/agent-a" "$STATE/agent-b"
chmod 755 "$STATE" "$STATE/specs"
DATASET=/usr/share/datasets/fashion-mnist
if [[ ! -d $DATASET ]]; then
  phase "install (apt)" "${SUDO[@]}" apt-get install -y -q dataset-fashion-mnist
fi
background() {  # background LOG COMMAND...: in a process group of its own
  local log=$1
  shift
  setsid "$@" >>"$log" 2>&1 &
  groups+=($!)
}
background "$STATE/hpcai500d.log" buildah run --isolation chroot \
  -v "$STATE/db:/var/lib/hpcai500" "$coordinator_ctr" -- \
  hpcai500d --grpc "$GRPC" --http "$HTTP" --db /var/lib/hpcai500/hpcai500.db \
  --web-dir /usr/local/share/hpcai500/web
for node in a b; do
  background "$STATE/agent-$node.log" buildah run --isolation chroot \
    -v "$STATE/agent-$node:/var/lib/hpcai500-agent" \
    -v "$DATASET:$DATASET:ro" "$agent_ctr" -- \
    hpcai500-agent --coordinator "$GRPC" --name "container-$node" --slots 2 \
    --workdir /var/lib/hpcai500-agent/work
done
cli() {
  buildah run --isolation chroot -v "$STATE/specs:/specs:ro" \
    "$coordinator_ctr" -- hpcai500 --coordinator "$GRPC" "$@"
}
both_agents_registered() {
  local listed
  for _ in $(seq 60); do
    listed="$(cli nodes 2>/dev/null || true)"
    if grep -q container-a <<<"$listed" && grep -q container-b <<<"$listed"; then
      echo "$listed"
      return 0
    fi
    sleep 1
  done
  echo "the agents did not register in 60 s; logs in $STATE:"
  tail -n 20 "$STATE"/*.log
  return 1
}
phase "start" both_agents_registered
say_phase "noop" "examples/noop.yaml on both agents:"
shown cli submit /specs/noop.yaml --wait
say_phase "train" "examples/fmnist-smoke.yaml on 2 CPU ranks:"
shown cli submit /specs/fmnist-smoke.yaml --wait
say_phase "result" "the leaderboard:"
board="$(cli leaderboard)"
echo "$board" >&3
if ! grep -q fmnist-smoke <<<"$board"; then
  say "FAILED: the smoke run is not on the leaderboard (logs in $STATE)"
  exit 1
fi
rm -rf "$STATE"
say "the images built, answered --version and ran the demo"
