#!/usr/bin/env bash
# The test command: installs what is missing, builds everything (tests
# included), and runs every test, then the hardening builds.
# Unit tests run in parallel, as many as there are cores; then the tests of
# real processes (integration, fault, browser, slurm, netns) as many as there
# are cores too, each binary that trains to a target on two ranks alone
# (its tests ask for PROCESSORS 2, tests/CMakeLists.txt): they spend most of
# their time waiting on timeouts and processes, and each takes its own ports,
# folders and network namespaces, so they share the machine.
# The install and build phases show one line each (their output is in
# .hpcai500/test.log); ctest's report is on the screen as it always was,
# and ends the output (CI reads its closing lines).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${HPCAI500_BUILD_DIR:-$ROOT/build}"
source "$ROOT/scripts/progress.sh"
progress_start test
"$ROOT/scripts/build.sh"
cd "$BUILD"
shown ctest --output-on-failure -L unit -j "$(nproc)"
# The container images (label container) are built on demand: `ctest -L
# container` (deploy/containers/build-images.sh says why).
shown ctest --output-on-failure -LE "^(unit|container)$" -j "$(nproc)"
# The hardening builds (docs/design.md, "Hardening in CI"), each in a folder
# of its own and without the worker.
"$ROOT/scripts/sanitize.sh" asan
"$ROOT/scripts/sanitize.sh" tsan
"$ROOT/scripts/fuzz.sh"
