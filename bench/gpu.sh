#!/usr/bin/env bash
# GPU training-step benchmark, for a machine with an NVIDIA GPU and a pip
# torch (CUDA build): builds the worker and the bench binary against that
# torch's LibTorch, then trains ResNet-50 v1.5 on synthetic 224x224 images in
# bf16 autocast, channels-last, with the worker's model
# (hpcai500-train-step-bench --device cuda) and with torchvision's resnet50
# in PyTorch eager (bench/peers/train_step.py), one after the other, and
# prints images/s and the ratio. Goal: >= 1.0x, toward 3,000 images/s on
# one H200.
#
#   bench/gpu.sh [BATCH] [STEPS]        (defaults: 256, 30; 10 warm-up steps)
#
# Environment: PYTHON (default python3: the interpreter with the CUDA
# torch), BUILD_DIR (default build-gpu), JOBS (default nproc).
set -euo pipefail

cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
BUILD_DIR=${BUILD_DIR:-build-gpu}
JOBS=${JOBS:-$(nproc)}
BATCH=${1:-256}
STEPS=${2:-30}

"$PYTHON" - <<'PY' || { echo "gpu.sh: $PYTHON has no CUDA torch" >&2; exit 1; }
import sys, torch
print("torch", torch.__version__, "CUDA", torch.version.cuda,
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU")
sys.exit(0 if torch.cuda.is_available() else 1)
PY

# 1. Build against the pip torch's LibTorch (its TorchConfig.cmake carries
#    the wheel's C++ ABI flag). The worker's CMake wants Gloo headers: the
#    wheel ships them under torch/include where present, else libgloo-dev.
TORCH_PREFIX=$("$PYTHON" -c 'import torch; print(torch.utils.cmake_prefix_path)')
TORCH_INCLUDE=$("$PYTHON" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "include"))')
EXTRA=()
if [[ -f "$TORCH_INCLUDE/gloo/algorithm.h" ]]; then
  EXTRA+=("-DGLOO_INCLUDE_DIR=$TORCH_INCLUDE")
fi
GENERATOR=()
command -v ninja >/dev/null && GENERATOR=(-G Ninja)
cmake "${GENERATOR[@]}" -S . -B "$BUILD_DIR" \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$TORCH_PREFIX" \
  -DHPCAI500_WORKER_ONLY=ON -DHPCAI500_BUILD_TESTS=OFF \
  -DHPCAI500_BUILD_BENCH=ON "${EXTRA[@]}"
cmake --build "$BUILD_DIR" -j "$JOBS" \
  --target hpcai500-train-step-bench hpcai500-worker

# 2. Side by side: the same model, batch, precision and memory format; 10
#    warm-up steps excluded (cuDNN autotuning, allocator growth), the median
#    of STEPS timed steps, each ended by a device synchronize.
HPCAI500_BENCH_PYTHON="$PYTHON" "$PYTHON" bench/compare.py \
  --build-dir "$BUILD_DIR" train-step --only resnet50 \
  --resnet50-batch "$BATCH" --precision bf16 --device cuda \
  --channels-last 1 --warmup 10 --steps "$STEPS" --threads "$(nproc)"
