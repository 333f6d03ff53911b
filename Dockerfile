# The command in a container: the image docs/fleet.md's Kubernetes Job runs on every GPU node.
#
#   docker build -t registry.example.com/mapped-reg-conformance:0.1.0 .
#   docker build --build-arg WITH_HISTORY=1 -t registry.example.com/mapped-reg-conformance:0.1.0-history .
#   docker run --rm --gpus all registry.example.com/mapped-reg-conformance:0.1.0 --scratch-dir /scratch ...
#
# Node.js 20 (slim) and the package installed from its packed tarball (`npm pack`), its production dependencies
# only; no compiler (koffi, rolldown and DuckDB come as prebuilt binaries; no install script runs). The GPU
# driver is not in the image: it is the node's. The NVIDIA container toolkit mounts the host's libcuda.so.1 into
# the container (`--gpus all`, or a Kubernetes GPU limit; NVIDIA_DRIVER_CAPABILITIES must include compute); for
# ROCm, pass /dev/kfd and /dev/dri and mount the host's /opt/rocm with MAPPED_REG_HIP_LIBRARY pointing into it.
#
# WITH_HISTORY=1 adds the history store's engine (@duckdb/node-api, at the version the package pins, about
# 70 MB) for the fleet's history Job; the gate never needs it.
#
# test/pack.test.ts makes the same install without Docker (this file's RUN of the last stage, run as written,
# into an empty prefix) and bounds its size.

# 1. the tarball, as `npm pack` makes it from this checkout (its prepare step builds dist/)
FROM node:20-slim AS pack
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
RUN npm pack --pack-destination /packs

# 2. the image
FROM node:20-slim
ARG WITH_HISTORY=0
ARG PACKS=/tmp/packs
COPY --from=pack /packs/ ${PACKS}/
RUN --mount=type=cache,target=/root/.npm \
    set -eu; \
    tarball=$(ls "$PACKS"/mapped-reg-conformance-*.tgz); \
    engine=; \
    if [ "$WITH_HISTORY" = 1 ]; then \
      engine="@duckdb/node-api@$(tar -xzOf "$tarball" package/package.json | node -e 'process.stdout.write(JSON.parse(require("fs").readFileSync(0, "utf8")).peerDependencies["@duckdb/node-api"])')"; \
    fi; \
    npm install --global --omit=dev --ignore-scripts --no-audit --no-fund --no-update-notifier "$tarball" $engine; \
    rm -rf "$PACKS"; \
    mapped-reg-conformance --version
ENTRYPOINT ["mapped-reg-conformance"]
