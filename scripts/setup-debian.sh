#!/usr/bin/env bash
# Sets up a Debian machine for `npm ci` and `npm test`: the system packages the tests load for real (the OpenCL
# ICD loader with PoCL's CPU device, the Vulkan loader with Mesa's lavapipe, a C compiler for the driver double,
# Debian's chromium and a font for the HTML report's browser test, xmllint to validate the JUnit reports against
# Jenkins' junit-10.xsd), and Node.js 20 or later with npm when the machine has none (Debian 13's packages; on an
# older Debian it says where to get one). Installs only what is missing; run as root or through sudo.
# The README's first command, and the first step of .ci/run.
set -euo pipefail
PACKAGES=(ocl-icd-libopencl1 pocl-opencl-icd libvulkan1 mesa-vulkan-drivers gcc libc6-dev chromium fonts-dejavu-core libxml2-utils git)

as_root=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup-debian.sh: run it as root (no sudo here)" >&2; exit 1; }
  as_root=(sudo)
fi

node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

wanted=("${PACKAGES[@]}")
if [ "$(node_major)" -lt 20 ] || ! command -v npm >/dev/null; then wanted+=(nodejs npm); fi
missing=()
for p in "${wanted[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p"); done
if ((${#missing[@]})); then
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [ "$(node_major)" -lt 20 ]; then
  echo "setup-debian.sh: Node.js $(node --version 2>/dev/null || echo none) is older than 20 (this Debian's package): install Node.js 20 from nodejs.org or NodeSource, then npm ci" >&2
  exit 1
fi
echo "setup-debian.sh: the system packages are installed; Node.js $(node --version), npm $(npm --version)"
