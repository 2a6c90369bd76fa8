# The pilotlight image: one binary (`pilotlight controller`, `pilotlight
# activator`, ...) on Debian bookworm, run as the non-root user 65532 with
# nothing to write (the chart mounts no volume and sets a read-only root).
#
#   docker build -t <registry>/pilotlight:0.1.0 .     (or podman/buildah)
#   helm install pilotlight charts/pilotlight --set image.repository=<registry>/pilotlight
#
# Build stage: the same Debian packages scripts/deps installs, without the
# test and lint tools; the tests are not built.
FROM debian:bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config \
      libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler \
      prometheus-cpp-dev libcpp-httplib-dev libabsl-dev nlohmann-json3-dev \
      libyaml-cpp-dev libssl-dev zlib1g-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY cmake cmake
COPY proto proto
COPY controller controller
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DPILOTLIGHT_BUILD_TESTS=OFF \
 && ninja -C /build pilotlight \
 && strip /build/controller/cmd/pilotlight \
 && /build/controller/cmd/pilotlight --version

# Run stage: the shared libraries the binary links (ldd), nothing else.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libabsl20220623 libbrotli1 libc-ares2 libcpp-httplib0.11 libgrpc++1.51 \
      libgrpc29 libprometheus-cpp-core1.0 libprotobuf32 libre2-9 libssl3 \
      libyaml-cpp0.7 zlib1g ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /build/controller/cmd/pilotlight /usr/local/bin/pilotlight
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/pilotlight"]
CMD ["--help"]
