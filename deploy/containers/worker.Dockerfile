# syntax=docker/dockerfile:1
# The training worker, hpcai500-worker, built against a CUDA LibTorch (NCCL
# for several GPUs, Gloo on CPU). The agent image (agent.Dockerfile) starts
# from this one, since the agent forks the worker; on its own it runs one
# rank by hand (hpcai500-worker --help), e.g. under torchrun-style variables.
# From the repository root:
#
#   docker build -f deploy/containers/worker.Dockerfile -t hpcai500-worker .
#
# Everything CUDA comes from PyPI, pinned in scripts/requirements.txt, as on
# a build machine with nothing preinstalled: LibTorch is the one inside
# torch's wheel (a CUDA 13.0 build, with cuBLAS, cuDNN, NCCL and the runtime
# as wheels beside it), nvJPEG is a wheel, and the build stage compiles with
# NVIDIA's CUDA 13.0 compiler wheels, linked into a toolkit folder by
# scripts/cuda-view.sh. So the base is any plain Debian 12 or Ubuntu 24.04
# image (--build-arg BASE_IMAGE=...); the GPU driver is the host's, which the
# NVIDIA container toolkit brings in at run time. The virtual environment
# /opt/torch keeps its path in the runtime stage so the worker's RPATH finds
# LibTorch (docs/design.md, "One LibTorch").
ARG BASE_IMAGE=ubuntu:24.04

FROM ${BASE_IMAGE} AS build
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# libgloo-dev: the Gloo headers the wheel's ProcessGroupGloo.hpp includes
# (the wheel ships none); zlib and OpenSSL (the SHA-256 of checkpoint
# manifests) are required, libjpeg-turbo (JPEG folders) and HDF5 (Extreme
# Weather) are optional features the worker builds with when found. ccache
# with a cache mount makes a rebuild of the same sources take minutes.
RUN apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
      --no-install-recommends build-essential cmake ninja-build ccache \
      python3 python3-venv zlib1g-dev libssl-dev libturbojpeg0-dev \
      libhdf5-dev libgloo-dev \
    && rm -rf /var/lib/apt/lists/*
# torch, nvJPEG and the CUDA compiler wheels at the versions CI builds with.
# Behind a TLS-inspecting proxy, pip needs the proxy's CA: pass the file as
# the build secret pip_cert (docker build --secret id=pip_cert,src=FILE;
# deploy/containers/build-images.sh passes $PIP_CERT or $SSL_CERT_FILE).
COPY scripts/requirements.txt scripts/cuda-view.sh /tmp/
RUN --mount=type=secret,id=pip_cert \
    if [ -s /run/secrets/pip_cert ]; then export PIP_CERT=/run/secrets/pip_cert; fi \
    && python3 -m venv /opt/torch \
    && /opt/torch/bin/pip install --no-cache-dir --progress-bar off \
         $(grep -E '^(torch|nvidia-[a-z-]+)==' /tmp/requirements.txt) \
    && /tmp/cuda-view.sh /opt/torch
WORKDIR /src
COPY . .
# The worker alone (-DHPCAI500_WORKER_ONLY=ON: no gRPC, abseil or protobuf),
# found through the venv's python as in CI (cmake/LibTorch.cmake).
RUN --mount=type=cache,target=/root/.cache/ccache \
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
         -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
         -DHPCAI500_PYTHON=/opt/torch/bin/python3 -DHPCAI500_WORKER_ONLY=ON \
         -DCUDA_TOOLKIT_ROOT_DIR=/opt/torch/cuda -DHPCAI500_BUILD_TESTS=OFF \
    && cmake --build build --target hpcai500-worker \
    && deploy/containers/runtime-packages.sh build/bin/hpcai500-worker > /runtime-packages \
    && rm -rf /opt/torch/cuda /opt/torch/lib/python3*/site-packages/nvidia/cu13/bin \
         /opt/torch/lib/python3*/site-packages/nvidia/cu13/nvvm

FROM ${BASE_IMAGE} AS runtime
COPY --from=build /runtime-packages /tmp/runtime-packages
RUN apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
      --no-install-recommends $(cat /tmp/runtime-packages) \
    && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages \
    && useradd --system --uid 10001 --user-group --create-home \
         --home-dir /var/lib/hpcai500-agent --shell /usr/sbin/nologin hpcai500
# LibTorch and the CUDA libraries of the wheels (cuBLAS, cuDNN, NCCL,
# nvJPEG, ...), at the path the worker was linked against; the compiler
# (nvcc, nvvm) stays in the build stage.
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
