# syntax=docker/dockerfile:1
# The training worker, hpcai500-worker, built against a CUDA LibTorch (NCCL
# for several GPUs, Gloo on CPU). The agent image (agent.Dockerfile) starts
# from this one, since the agent forks the worker; on its own it runs one
# rank by hand (hpcai500-worker --help), e.g. under torchrun-style variables.
# From the repository root:
#
#   docker build -f deploy/containers/worker.Dockerfile -t hpcai500-worker .
#
# LibTorch is the one inside the CUDA build of pip's torch (its
# TorchConfig.cmake carries the C++ ABI flag; from torch 2.7 on it is the
# cxx11 ABI), in a virtual environment at /opt/torch, kept at the same path
# in the runtime stage so the worker's RPATH finds it. Change the versions
# together: TORCH_VERSION must exist for TORCH_INDEX's CUDA, and the CUDA
# images should match that CUDA.
ARG CUDA_DEVEL_IMAGE=nvidia/cuda:12.6.3-cudnn-devel-ubuntu24.04
ARG CUDA_RUNTIME_IMAGE=nvidia/cuda:12.6.3-cudnn-runtime-ubuntu24.04
ARG TORCH_VERSION=2.7.1
ARG TORCH_INDEX=https://download.pytorch.org/whl/cu126

# The CUDA + LibTorch base: the CUDA toolkit and cuDNN from NVIDIA's image,
# LibTorch from the CUDA torch wheel.
FROM ${CUDA_DEVEL_IMAGE} AS libtorch
ARG TORCH_VERSION
ARG TORCH_INDEX
RUN apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
      --no-install-recommends python3 python3-venv \
    && rm -rf /var/lib/apt/lists/* \
    && python3 -m venv /opt/torch \
    && /opt/torch/bin/pip install --no-cache-dir \
         "torch==${TORCH_VERSION}" --index-url "${TORCH_INDEX}"

FROM libtorch AS build
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# libgloo-dev only where the wheel ships no Gloo headers (below); zlib is
# required, libjpeg-turbo (JPEG folders) and HDF5 (Extreme Weather) are
# optional features the worker builds with when found.
RUN apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
      --no-install-recommends build-essential cmake ninja-build \
      zlib1g-dev libturbojpeg0-dev libhdf5-dev libgloo-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The worker alone (-DHPCAI500_WORKER_ONLY=ON: no gRPC, abseil or protobuf),
# as bench/gpu.sh builds it: the wheel's cmake prefix, and its own Gloo
# headers when it has them (they must match the Gloo inside LibTorch).
RUN TORCH_PREFIX=$(/opt/torch/bin/python -c 'import torch; print(torch.utils.cmake_prefix_path)') \
    && TORCH_INCLUDE=$(/opt/torch/bin/python -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "include"))') \
    && GLOO=() \
    && if [ -f "$TORCH_INCLUDE/gloo/algorithm.h" ]; then GLOO=("-DGLOO_INCLUDE_DIR=$TORCH_INCLUDE"); fi \
    && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
         -DCMAKE_PREFIX_PATH="$TORCH_PREFIX" -DHPCAI500_WORKER_ONLY=ON \
         -DHPCAI500_BUILD_TESTS=OFF "${GLOO[@]}" \
    && cmake --build build --target hpcai500-worker \
    && deploy/containers/runtime-packages.sh build/bin/hpcai500-worker > /runtime-packages

FROM ${CUDA_RUNTIME_IMAGE} AS runtime
COPY --from=build /runtime-packages /tmp/runtime-packages
RUN apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
      --no-install-recommends $(cat /tmp/runtime-packages) \
    && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages \
    && useradd --system --uid 10001 --user-group --create-home \
         --home-dir /var/lib/hpcai500-agent --shell /usr/sbin/nologin hpcai500
# LibTorch and the CUDA libraries of the wheel (cuBLAS, cuDNN, NCCL, ...),
# at the path the worker was linked against.
COPY --from=build /opt/torch /opt/torch
COPY --from=build /src/build/bin/hpcai500-worker /usr/local/bin/
LABEL org.opencontainers.image.title="hpcai500-worker" \
      org.opencontainers.image.description="hpcai500 training worker (LibTorch, CUDA)"
ENV NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=compute,utility
USER hpcai500
WORKDIR /var/lib/hpcai500-agent
# No HEALTHCHECK: a worker listens on nothing and ends with its run.
ENTRYPOINT ["hpcai500-worker"]
CMD ["--help"]
