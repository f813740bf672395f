# syntax=docker/dockerfile:1
# The training worker, hpcai500-worker, built against a CUDA LibTorch (NCCL
# for several GPUs, Gloo on CPU). The agent image (agent.Dockerfile) starts
# from this one, since the agent forks the worker; on its own it runs one
# rank by hand (hpcai500-worker --help), e.g. under torchrun-style variables.
# From the repository root:
#
#   docker build -f deploy/containers/worker.Dockerfile -t hpcai500-worker .
#
# LibTorch is the one inside PyPI's torch at the version pinned in
# scripts/requirements.txt (a CUDA 13.0 build), in a virtual environment at
# /opt/torch, kept at the same path in the runtime stage so the worker's
# RPATH finds it. The CUDA images match the wheel's CUDA (13.0); CI builds
# with the same cmake/LibTorch.cmake lines (docs/design.md, "One LibTorch").
ARG CUDA_DEVEL_IMAGE=nvidia/cuda:13.0.2-cudnn-devel-ubuntu24.04
ARG CUDA_RUNTIME_IMAGE=nvidia/cuda:13.0.2-cudnn-runtime-ubuntu24.04

# The CUDA + LibTorch base: the CUDA toolkit from NVIDIA's image (LibTorch's
# CMake package looks for nvcc), LibTorch and its CUDA libraries from the
# torch wheel.
FROM ${CUDA_DEVEL_IMAGE} AS libtorch
COPY scripts/requirements.txt /tmp/requirements.txt
RUN apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
      --no-install-recommends python3 python3-venv \
    && rm -rf /var/lib/apt/lists/* \
    && python3 -m venv /opt/torch \
    && /opt/torch/bin/pip install --no-cache-dir \
         "$(grep '^torch==' /tmp/requirements.txt)"

FROM libtorch AS build
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# libgloo-dev: the Gloo headers the wheel's ProcessGroupGloo.hpp includes
# (the wheel ships none); zlib and OpenSSL (the SHA-256 of checkpoint
# manifests) are required, libjpeg-turbo (JPEG folders) and HDF5 (Extreme
# Weather) are optional features the worker builds with when found.
RUN apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
      --no-install-recommends build-essential cmake ninja-build \
      zlib1g-dev libssl-dev libturbojpeg0-dev libhdf5-dev libgloo-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The worker alone (-DHPCAI500_WORKER_ONLY=ON: no gRPC, abseil or protobuf),
# found through the venv's python as in CI (cmake/LibTorch.cmake).
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
         -DHPCAI500_PYTHON=/opt/torch/bin/python3 -DHPCAI500_WORKER_ONLY=ON \
         -DHPCAI500_BUILD_TESTS=OFF \
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
