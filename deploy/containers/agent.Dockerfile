# syntax=docker/dockerfile:1
# The node agent image: hpcai500-agent on top of the worker image, because
# the agent forks hpcai500-worker (by default the one beside its own
# executable, /usr/local/bin). Build the worker image first, then this one,
# from the repository root:
#
#   docker build -f deploy/containers/worker.Dockerfile -t hpcai500-worker .
#   docker build -f deploy/containers/agent.Dockerfile -t hpcai500-agent .
#
# (--build-arg WORKER_IMAGE=REGISTRY/hpcai500-worker:TAG for another tag.)
# The agent is built on the worker image's distribution (BUILD_IMAGE must
# match it) so the packages it links are installed under their names there.
ARG WORKER_IMAGE=hpcai500-worker
ARG BUILD_IMAGE=ubuntu:24.04

FROM ${BUILD_IMAGE} AS build
RUN apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
      --no-install-recommends build-essential cmake ninja-build ccache pkg-config \
      libcli11-dev libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev \
      protobuf-compiler libabsl-dev libboost-dev libsqlite3-dev \
      nlohmann-json3-dev libyaml-cpp-dev libssl-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/root/.cache/ccache \
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
      -DHPCAI500_NO_WORKER=ON -DHPCAI500_BUILD_TESTS=OFF \
    && cmake --build build --target hpcai500_agent_main hpcai500 \
    && deploy/containers/runtime-packages.sh build/bin/hpcai500-agent \
         build/bin/hpcai500 > /runtime-packages

FROM ${WORKER_IMAGE} AS runtime
USER root
COPY --from=build /runtime-packages /tmp/runtime-packages
# iproute2: `ip` to see the node's interfaces when choosing --iface.
RUN apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
      --no-install-recommends iproute2 $(cat /tmp/runtime-packages) \
    && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages
COPY --from=build /src/build/bin/hpcai500-agent /src/build/bin/hpcai500 /usr/local/bin/
LABEL org.opencontainers.image.title="hpcai500-agent" \
      org.opencontainers.image.description="hpcai500 node agent with the CUDA training worker"
# The worker image's user (uid 10001); its home is the agent's workdir.
USER hpcai500
WORKDIR /var/lib/hpcai500-agent
VOLUME /var/lib/hpcai500-agent
# No EXPOSE: the agent listens on nothing (it dials the coordinator); the
# workers' rendezvous port is reserved per run on the node's network.
# No HEALTHCHECK: there is no port to probe; a lost agent shows as a node
# that is down in `hpcai500 nodes` after --node-timeout-s.
ENTRYPOINT ["hpcai500-agent"]
CMD ["--help"]
