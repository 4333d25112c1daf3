#!/usr/bin/env bash
# Configures and builds one flavour: tools/build.sh [release|cli|asan|fuzz] (default release).
# cli: the release configuration without tests and benchmarks, only the nbits program, and on x86
# only the kernel sets this machine's CPU runs (NBITS_X86_KERNELS=host: the main job's lean build;
# a later `release` build in the same folder compiles the other sets and reuses every other object).
set -euo pipefail
cd "$(dirname "$0")/.."
flavour=${1:-release}
jobs=${NBITS_JOBS:-$(nproc)}
LAUNCHER=""
# llguidance (cargo) compiles once per machine for every flavour (and the Python package):
# one cargo target folder in the cache (cmake/room_guidance.cmake reads the variable).
export NBITS_CARGO_TARGET_DIR=${NBITS_CARGO_TARGET_DIR:-${NBITS_CACHE:-$HOME/.cache/nbits}/cargo}
if command -v ccache >/dev/null 2>&1; then
  LAUNCHER="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache"
fi
case "$flavour" in
  release) cmake -S . -B build -G Ninja $LAUNCHER -DCMAKE_BUILD_TYPE=Release -DNBITS_WERROR=ON \
             -DNBITS_BUILD_TESTS=ON -DNBITS_BUILD_BENCH=ON -DNBITS_X86_KERNELS=all >/dev/null
           cmake --build build -j "$jobs" ;;
  cli)     cmake -S . -B build -G Ninja $LAUNCHER -DCMAKE_BUILD_TYPE=Release -DNBITS_WERROR=ON \
             -DNBITS_BUILD_TESTS=OFF -DNBITS_BUILD_BENCH=OFF -DNBITS_X86_KERNELS=host >/dev/null
           cmake --build build -j "$jobs" --target nbits ;;
  # -O1 -g1 (line tables: symbolized ASan/UBSan stacks with file:line) compiles in about half
  # the time of RelWithDebInfo's -O2 -g (tests/llm/generator_test.cc: 15 s vs 28 s), the
  # optimisation level ASan's documentation recommends.
  # The kernel sets this CPU runs only (NBITS_X86_KERNELS=host): the tests of the others skip on
  # it anyway, and their files are the longest compiles of the build.
  asan)    cmake -S . -B build-asan -G Ninja $LAUNCHER -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNBITS_SANITIZE=ON \
             -DNBITS_X86_KERNELS=host \
             "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
             -DNBITS_BUILD_BENCH=OFF -DNBITS_WERROR=ON >/dev/null
           cmake --build build-asan -j "$jobs" ;;
  # The fuzz targets drive the readers and the model synthesis: portable kernels only (the SIMD
  # kernels are the ASan build's), and -O1 -g1 as the ASan build (a cold build of the x86 kernel
  # templates with coverage + ASan at -O2 took most of the fuzz leg's 21 minutes).
  fuzz)    CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja $LAUNCHER -DCMAKE_BUILD_TYPE=RelWithDebInfo \
             "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
             -DNBITS_PORTABLE_KERNELS=ON -DNBITS_BUILD_FUZZ=ON -DNBITS_BUILD_TESTS=OFF -DNBITS_BUILD_BENCH=OFF -DNBITS_BUILD_CLI=OFF >/dev/null
           targets=$(for f in fuzz/*.cc; do n=$(basename "$f" .cc); printf 'fuzz_%s ' "$n"; done)
           cmake --build build-fuzz -j "$jobs" --target $targets ;;
  *) echo "usage: tools/build.sh [release|cli|asan|fuzz]" >&2; exit 2 ;;
esac
