# The command in a container: the image docs/fleet.md's Kubernetes Job runs on every GPU node.
#
#   docker build -t registry.example.com/mapped-reg-conformance:0.1.0 .
#   docker build --build-arg WITH_HISTORY=1 -t registry.example.com/mapped-reg-conformance:0.1.0-history .
#   mkdir -p /var/tmp/mapped-reg/scratch /var/tmp/mapped-reg/out && chown 1000:1000 /var/tmp/mapped-reg/*
#   docker run --rm --gpus all -v /var/tmp/mapped-reg/scratch:/scratch -v /var/tmp/mapped-reg/out:/out \
#     registry.example.com/mapped-reg-conformance:0.1.0 --scratch-dir /scratch --json /out/results.json
#
# The scratch folder is a volume on the host's disk: the probe maps a file of --size MiB there, and the image's
# own file system (overlayfs) is neither where the package's scratch/ can be written nor the disk the suite
# should certify. Results go to a second volume.
#
# Not root: the command runs as the image's `node` user (uid 1000). The GPU does not need root: the NVIDIA
# container toolkit's device nodes are open to every user, and ROCm's /dev/kfd and /dev/dri need only their
# groups (docker run --group-add video --group-add render). The host folders mounted must be writable by uid 1000.
#
# Node.js 20 (slim, Debian bookworm), pinned to the version the tests run on; a pull by digest
# (node:20.20.2-bookworm-slim@sha256:...) pins it further. and the package installed from its packed tarball (`npm pack`), its production dependencies
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
FROM node:20.20.2-bookworm-slim AS pack
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
RUN npm pack --pack-destination /packs

# 2. the image
FROM node:20.20.2-bookworm-slim
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
USER node
WORKDIR /home/node
ENTRYPOINT ["mapped-reg-conformance"]
