#!/usr/bin/env bash
# Prints, one a line, the Debian/Ubuntu packages that own the shared
# libraries the given binaries load (by ldd), so a slim runtime stage
# installs exactly what the build stage linked, under that distribution's
# own package names. Libraries no package owns (LibTorch under /opt) are
# left out: the stage that needs them copies them.
#
#   deploy/containers/runtime-packages.sh build/bin/hpcai500d build/bin/hpcai500
set -euo pipefail
if (($# == 0)); then
  echo "usage: runtime-packages.sh BINARY..." >&2
  exit 64
fi
for binary in "$@"; do
  if [[ ! -x $binary ]]; then
    echo "runtime-packages.sh: $binary is not an executable" >&2
    exit 66
  fi
  # A library missing here (the GPU driver's, which the container runtime
  # brings) is named, not fatal.
  ldd "$binary" | grep 'not found' | sed "s|^|runtime-packages.sh: $binary: |" >&2 || true
  # "libfoo.so.1 => /usr/lib/x86_64-linux-gnu/libfoo.so.1 (0x...)"
  ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }'
done | sort -u | while read -r library; do
  # The real file, which dpkg may list under /lib on a merged /usr.
  real=$(readlink -f "$library")
  dpkg-query -S "$real" 2>/dev/null ||
    dpkg-query -S "${real#/usr}" 2>/dev/null || true
done | cut -d: -f1 | sort -u
