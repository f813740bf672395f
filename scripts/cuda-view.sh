#!/usr/bin/env bash
# Makes VENV/cuda, a CUDA toolkit folder made of links into the NVIDIA wheels
# installed in the virtual environment VENV (pip's layout, nvidia/cu13: bin,
# include, nvvm, and lib with only versioned names such as libcudart.so.13),
# in the layout nvcc, CMake and the linker look for: lib64 beside bin, and
# the unversioned name (libcudart.so) of every library.
# Used by scripts/install-deps.sh for .venv and by the worker's container
# image (deploy/containers/worker.Dockerfile) for /opt/torch.
#
#   scripts/cuda-view.sh VENV
set -euo pipefail
if (($# != 1)); then
  echo "usage: cuda-view.sh VENV" >&2
  exit 64
fi
VENV="${1%/}"
wheels=("$VENV"/lib/python3*/site-packages/nvidia/cu13)
from="${wheels[0]#"$VENV"/}"
view="$VENV/cuda"
if [[ ! -x "$VENV/$from/bin/nvcc" ]]; then
  echo "cuda-view.sh: no nvcc in $VENV's NVIDIA wheels" \
       "(nvidia-cuda-nvcc of scripts/requirements.txt)" >&2
  exit 1
fi
rm -rf "$view.new"
mkdir -p "$view.new/lib64"
ln -s "../$from/bin" "../$from/include" "../$from/nvvm" "$view.new/"
ln -s lib64 "$view.new/lib"
for lib in "$VENV/$from"/lib/*; do
  name="${lib##*/}"
  ln -s "../../$from/lib/$name" "$view.new/lib64/$name"
  if [[ "$name" =~ ^(lib.+\.so)\.[0-9.]+$ ]]; then
    ln -sf "../../$from/lib/$name" "$view.new/lib64/${BASH_REMATCH[1]}"
  fi
done
rm -rf "$view"
mv "$view.new" "$view"
