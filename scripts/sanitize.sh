#!/usr/bin/env bash
# The sanitizer builds of the test command (docs/design.md, "Hardening in
# CI"): everything but the worker (no LibTorch, no test that starts
# hpcai500-worker) built at -O1 into a folder of its own, then its unit tests.
#   scripts/sanitize.sh asan   build-asan: AddressSanitizer + UBSan (a finding
#                              aborts the test), every unit test and the
#                              integration tests left (the agent's, with a
#                              stand-in worker)
#   scripts/sanitize.sh tsan   build-tsan: ThreadSanitizer, the unit tests
#                              that run threads
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
KIND="${1:-}"
TARGETS=()
case "$KIND" in
  asan)
    # GCC's -fsanitize=undefined leaves out float-cast-overflow.
    SANITIZE=address,undefined,float-cast-overflow
    LABELS='unit|integration'
    ;;
  tsan)
    SANITIZE=thread
    LABELS=unit
    # The tests whose code runs on several threads: the queue and logger,
    # hpcai500d's gRPC services over loopback, the HTTP server, the CLI
    # against an in-process gRPC server.
    TARGETS=(common_service_test server_grpc_services_test http_server_test
             cli_test)
    ;;
  *)
    echo "usage: scripts/sanitize.sh asan|tsan" >&2
    exit 2
    ;;
esac
BUILD="$ROOT/build-$KIND"
source "$ROOT/scripts/progress.sh"
progress_start sanitize
"$ROOT/scripts/install-deps.sh"
# Sets the option in the cache; build.sh configures (ccache, Ninja) and builds.
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DHPCAI500_SANITIZE="$SANITIZE" >/dev/null
HPCAI500_BUILD_DIR="$BUILD" "$ROOT/scripts/build.sh" "${TARGETS[@]}"

export UBSAN_OPTIONS=print_stacktrace=1
export ASAN_OPTIONS=strict_init_order=1
export TSAN_OPTIONS="suppressions=$ROOT/tests/sanitizers/tsan.supp second_deadlock_stack=1"
cd "$BUILD"
# With TARGETS, the tests of the binaries left unbuilt are placeholders
# named <target>_NOT_BUILT.
shown ctest --output-on-failure -L "$LABELS" -E '_NOT_BUILT$' -j "$(nproc)"
