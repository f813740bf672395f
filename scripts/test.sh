#!/usr/bin/env bash
# The test command: installs what is missing, builds everything (tests
# included), and runs every test, then the hardening builds.
# Unit tests run in parallel; integration tests (real processes, training)
# run one at a time so their timings stay honest on a small machine.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${HPCAI500_BUILD_DIR:-$ROOT/build}"
"$ROOT/scripts/build.sh"
cd "$BUILD"
ctest --output-on-failure -L unit -j "$(nproc)"
ctest --output-on-failure -LE unit
# The hardening builds (docs/design.md, "Hardening in CI"), each in a folder
# of its own and without the worker.
"$ROOT/scripts/sanitize.sh" asan
"$ROOT/scripts/sanitize.sh" tsan
"$ROOT/scripts/fuzz.sh"
