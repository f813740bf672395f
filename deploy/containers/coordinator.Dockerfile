# syntax=docker/dockerfile:1
# The coordinator image: hpcai500d, the hpcai500 CLI and the web pages, on
# Debian 12 (the platform the project is built and tested on). No LibTorch:
# the coordinator never trains. From the repository root:
#
#   docker build -f deploy/containers/coordinator.Dockerfile -t hpcai500d .
#
# The database lives in the volume /var/lib/hpcai500. Before the first start,
# make an admin token there (it turns auth on, and hpcai500d refuses to listen
# beyond loopback without auth or TLS):
#
#   docker run --rm -v hpcai500-db:/var/lib/hpcai500 hpcai500d \
#     token create --role admin --user you --db /var/lib/hpcai500/hpcai500.db
#   docker run -d -p 7500:7500 -p 7580:7580 -v hpcai500-db:/var/lib/hpcai500 hpcai500d
#
# deploy/README.md has the rest (TLS, agent tokens, queues, backups).
ARG DEBIAN_IMAGE=debian:12

FROM ${DEBIAN_IMAGE} AS build
RUN apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
      --no-install-recommends build-essential cmake ninja-build ccache pkg-config \
      libcli11-dev libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev \
      protobuf-compiler libabsl-dev libboost-dev libsqlite3-dev \
      nlohmann-json3-dev libyaml-cpp-dev libssl-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# Everything but the worker (no LibTorch), without the tests.
RUN --mount=type=cache,target=/root/.cache/ccache \
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
      -DHPCAI500_NO_WORKER=ON -DHPCAI500_BUILD_TESTS=OFF \
    && cmake --build build --target hpcai500d hpcai500 \
    && deploy/containers/runtime-packages.sh build/bin/hpcai500d \
         build/bin/hpcai500 > /runtime-packages

FROM ${DEBIAN_IMAGE}-slim AS runtime
COPY --from=build /runtime-packages /tmp/runtime-packages
# curl is the HEALTHCHECK's probe.
RUN apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
      --no-install-recommends curl ca-certificates $(cat /tmp/runtime-packages) \
    && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages \
    && useradd --system --uid 10001 --user-group --home-dir /var/lib/hpcai500 \
         --shell /usr/sbin/nologin hpcai500 \
    && install -d -o hpcai500 -g hpcai500 -m 0700 /var/lib/hpcai500
COPY --from=build /src/build/bin/hpcai500d /src/build/bin/hpcai500 /usr/local/bin/
COPY --from=build /src/web /usr/local/share/hpcai500/web
LABEL org.opencontainers.image.title="hpcai500d" \
      org.opencontainers.image.description="hpcai500 coordinator and CLI"
USER hpcai500
WORKDIR /var/lib/hpcai500
VOLUME /var/lib/hpcai500
# gRPC (CLI, agents) and HTTP (pages, JSON API, /metrics, /healthz).
EXPOSE 7500 7580
# /livez answers without a token; -k and the https try: with --tls-cert
# the HTTP port speaks only HTTPS.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD curl -fsS http://127.0.0.1:7580/livez || curl -fsSk https://127.0.0.1:7580/livez
ENTRYPOINT ["hpcai500d"]
CMD ["--grpc", "0.0.0.0:7500", "--http", "0.0.0.0:7580", \
     "--db", "/var/lib/hpcai500/hpcai500.db", \
     "--web-dir", "/usr/local/share/hpcai500/web"]
