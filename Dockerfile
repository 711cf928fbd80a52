# The het image: het-run's Volcano Jobs run it (het-run --emit-k8s --image
# NAME). Two stages: one builds het with the project's own setup script and
# installs it into /opt/het; the image gets only what the installed tree
# needs at run time (setup.sh --runtime) and the tree itself.
#
#   docker build -t het:0.1.0 .
#   het-run --cluster C.json --emit-k8s job.yaml --image het:0.1.0
#
# docs/install.md says what was checked here: it is linted (hadolint, in the
# install test); no image has been built on het's own machines, which have
# no container engine.
ARG DEBIAN_IMAGE=debian:12

FROM ${DEBIAN_IMAGE} AS build
WORKDIR /src/het
COPY . .
# Tests are not built: GoogleTest, lit and PyTorch stay out of the image.
RUN bash scripts/setup.sh --system \
 && cmake -G Ninja -S . -B /tmp/build -DCMAKE_BUILD_TYPE=Release \
      -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir -DHET_ENABLE_TESTS=OFF \
 && cmake --build /tmp/build \
 && cmake --install /tmp/build --prefix /opt/het --strip

FROM ${DEBIAN_IMAGE}
COPY scripts/setup.sh /tmp/setup.sh
RUN bash /tmp/setup.sh --runtime \
 && rm -rf /tmp/setup.sh /var/lib/apt/lists/*
COPY --from=build /opt/het /opt/het
ENV PATH=/opt/het/bin:${PATH}
WORKDIR /work
# Each pod's command comes from the Volcano Job (het-run --emit-k8s).
CMD ["het-run", "--help"]
