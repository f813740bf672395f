#!/usr/bin/env bash
# The fuzz part of the test command (docs/design.md, "Hardening in CI"):
# builds the libFuzzer targets of tests/fuzz into build-fuzz (clang-14,
# AddressSanitizer + UBSan, only the libraries they need) and runs each for
# HPCAI500_FUZZ_SECONDS (default 30) from its seed corpus, as the ctest
# tests labelled fuzz.
# A longer run of one target by hand, keeping what it finds in a folder of
# your own (the seeds in tests/fuzz/corpus/ are only read):
#   mkdir -p /tmp/spec-corpus
#   build-fuzz/tests/fuzz/spec_fuzzer -max_total_time=600 \
#     -dict=tests/fuzz/spec.dict /tmp/spec-corpus tests/fuzz/corpus/spec
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$ROOT/build-fuzz"
source "$ROOT/scripts/progress.sh"
progress_start fuzz
"$ROOT/scripts/install-deps.sh"
# Sets the compiler and options in the cache; build.sh configures (ccache,
# Ninja) and builds.
CC=clang-14 CXX=clang++-14 cmake -S "$ROOT" -B "$BUILD" -G Ninja \
  -DHPCAI500_SANITIZE=address,undefined -DHPCAI500_FUZZ=ON \
  -DHPCAI500_FUZZ_SECONDS="${HPCAI500_FUZZ_SECONDS:-30}" >/dev/null
HPCAI500_BUILD_DIR="$BUILD" "$ROOT/scripts/build.sh" fuzzers
export UBSAN_OPTIONS=print_stacktrace=1
cd "$BUILD"
shown ctest --output-on-failure -L fuzz -j "$(nproc)"
