#!/usr/bin/env bash
# Installs everything nbits needs to build and test on a fresh Debian 12 machine: what running
# needs (tools/setup_run.sh), then the test frameworks, the reference oracles' runtimes and the
# cross toolchains. Idempotent; run as root (or with sudo available).
set -euo pipefail
bash "$(dirname "$0")/setup_run.sh"
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
# chromium: the chat page's browser test (tests/serve/node/webui_test.mjs, headless).
pkgs=(clang clang-format libgtest-dev libgmock-dev libbenchmark-dev libclang-rt-14-dev python3-venv
      pkg-config libcpp-httplib-dev chromium)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
# Node.js + npm (reference oracles): Debian's packages unless a node is already installed
# (e.g. a NodeSource node ships its own npm and conflicts with Debian's npm package).
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${missing[@]}"
fi
# The arm64 cross build + QEMU leg's packages (aarch64 sysroot, clang-22/lld-22, qemu-user).
bash "$(dirname "$0")/arm64/setup.sh"
