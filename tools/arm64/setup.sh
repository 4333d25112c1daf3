#!/usr/bin/env bash
# Debian packages of the arm64 cross build + QEMU leg (tools/arm64/test.sh): the GCC 12 aarch64
# sysroot and libstdc++ (g++-aarch64-linux-gnu pulls libstdc++-12-dev-arm64-cross and
# libc6-dev-arm64-cross), clang-22 + lld-22 (bookworm-security, as for RISC-V), qemu-user 7.2
# (qemu-aarch64), GoogleTest sources (built with the cross compiler). Installs only what is missing
# (as root, or with sudo). Called by tools/setup.sh and tools/arm64/test.sh.
set -euo pipefail
pkgs=(cmake ninja-build clang-22 lld-22 g++-aarch64-linux-gnu qemu-user libgtest-dev nlohmann-json3-dev)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" != 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
