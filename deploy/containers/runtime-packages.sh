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
libraries=()
for binary in "$@"; do
  if [[ ! -x $binary ]]; then
    echo "runtime-packages.sh: $binary is not an executable" >&2
    exit 66
  fi
  # A library missing here (the GPU driver's, which the container runtime
  # brings) is named, not fatal.
  ldd "$binary" | grep 'not found' | sed "s|^|runtime-packages.sh: $binary: |" >&2 || true
  # "libfoo.so.1 => /usr/lib/x86_64-linux-gnu/libfoo.so.1 (0x...)"
  while read -r library; do
    # The real file, which dpkg may list under /lib on a merged /usr.
    real=$(readlink -f "$library")
    libraries+=("$real" "${real#/usr}")
  done < <(ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }')
done
# One query for all ("pkg:arch: /path", "pkg1, pkg2: /path"); paths no
# package owns are refused on stderr, and dpkg-query then exits 1.
{ dpkg-query -S "${libraries[@]}" 2>/dev/null || true; } |
  grep -v '^diversion ' | sed 's|: /.*||' | tr ',' '\n' |
  sed 's/^ *//; s/:.*//' | sort -u
