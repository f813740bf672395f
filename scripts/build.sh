#!/usr/bin/env bash
# Configures and builds hpcai500 into ./build (or $HPCAI500_BUILD_DIR).
# Usage: scripts/build.sh [TARGET...]: only the named CMake targets (and what
# they need); without any, everything, tests included. The screen shows the
# phases (install, configure, build N/M); CMake's and the compilers' output
# is in the log scripts/progress.sh names (HPCAI500_VERBOSE=1 shows it too).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${HPCAI500_BUILD_DIR:-$ROOT/build}"
source "$ROOT/scripts/progress.sh"
progress_start build
"$ROOT/scripts/install-deps.sh"
# ccache keys on paths relative to the checkout, so a fresh clone elsewhere
# (CI) reuses what an earlier build of the same sources compiled.
export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1
# LibTorch's precompiled header (cmake/LibTorch.cmake): ccache caches the
# files that use it only when told to trust its macros and times.
export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
LAUNCHER=()
if command -v ccache >/dev/null; then
  LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
phase configure cmake -S "$ROOT" -B "$BUILD" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo "${LAUNCHER[@]}"
TARGETS=()
if (($# > 0)); then
  TARGETS=(--target "$@")
fi
# Ninja's status line, "[done/total] ", is what the build phase shows.
export NINJA_STATUS="[%f/%t] "
phase build cmake --build "$BUILD" -j "$(nproc)" "${TARGETS[@]}"
