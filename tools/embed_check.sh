#!/usr/bin/env bash
# Installs the release build (build/) into a scratch prefix, builds examples/embed against it
# with find_package(nbits), and runs it on stories260K: the out-of-tree embedding check.
set -euo pipefail
cd "$(dirname "$0")/.."
shared=${NBITS_SHARED:-$(pwd)/../shared}
prefix=$(pwd)/build/embed-install
rm -rf "$prefix" build/embed-example
cmake --install build --prefix "$prefix" >/dev/null
cmake -S examples/embed -B build/embed-example -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" ${CMAKE_CXX_COMPILER_LAUNCHER:+-DCMAKE_CXX_COMPILER_LAUNCHER=$CMAKE_CXX_COMPILER_LAUNCHER} >/dev/null
cmake --build build/embed-example >/dev/null
model="$shared/models/stories260K/onnx_int4"
if [ ! -f "$model/model.onnx" ]; then
  echo "embed_check: missing $model" >&2
  exit 1
fi
out=$(build/embed-example/embed "$model" "Once upon a time")
echo "$out"
case "$out" in
  "Once upon a time"?*) echo "embed_check: ok" ;;
  *) echo "embed_check: unexpected output" >&2; exit 1 ;;
esac
