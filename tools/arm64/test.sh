#!/usr/bin/env bash
# arm64 leg: cross-builds the kernel tests and the CLI for aarch64 (clang-22 + lld-22, GCC 12
# sysroot; cmake/toolchains/aarch64-clang.cmake) and runs them under qemu-aarch64 (QEMU 7.2):
#   1. -cpu max (dotprod + i8mm + sve): dispatch must pick x16_i8mm_int8 (SMMLA GEMM, SDOT GEMV);
#      the table-driven kernel tests run every set the CPU allows (i8mm, dotprod, neon) against the
#      scalar reference (bit-exact for the x16 CompInt8 sets)
#   2. -cpu cortex-a76 (dotprod, no i8mm: Raspberry Pi 5's core): x16_dotprod_int8
#   3. -cpu max with NBITS_ISA=neon: x16_neon_int8 (the ARMv8.0 SMULL path; QEMU 7.2's ARMv8.0
#      models, cortex-a72/a53, behave the same: no dotprod in HWCAP)
#   4. the NEON vector helpers (norms, softmax, exp/SiLU, attention dot products) return the x86
#      build's AVX2 bits on every helper (tools/arm64/vector_ops_parity.cc, both builds)
#   5. stories260K int4/int8/int4_asym: 16 greedy tokens under QEMU (-cpu max and cortex-a76)
#      == the x86 build's (NBITS_X86_BIN, else build/nbits built if stale); also --scales fp16 at
#      accuracy levels 4 and 0. NBITS_ARM64_E2E=0 skips it.
# Self-contained: installs its Debian packages when missing (tools/arm64/setup.sh). Usage:
#   bash tools/arm64/test.sh       (from anywhere; builds in build-arm64/, NBITS_ARM64_BUILD overrides)
set -euo pipefail
cd "$(dirname "$0")/../.."
t0=$(date +%s)
bash tools/arm64/setup.sh

JOBS=${NBITS_JOBS:-$(nproc)}
B=${NBITS_ARM64_BUILD:-build-arm64}
LAUNCHER=()
command -v ccache >/dev/null && LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
SYSROOT=/usr/aarch64-linux-gnu
qemu() { local cpu=$1; shift; qemu-aarch64 -L "$SYSROOT" -cpu "$cpu" "$@"; }

echo "== arm64: cross build ($B)"
TC=(); [ -f "$B/CMakeCache.txt" ] || TC=(-DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-clang.cmake)  # first configure only
cmake -S . -B "$B" -G Ninja "${TC[@]}" \
  -DCMAKE_BUILD_TYPE=Release -DNBITS_WERROR=ON -DNBITS_BUILD_BENCH=OFF -DNBITS_BUILD_CLI=ON \
  "${LAUNCHER[@]}" >/dev/null
# One ninja run for both targets keeps both cores busy through the link steps.
targets=(test_kernels)
[ "${NBITS_ARM64_E2E:-1}" = 1 ] && [ -d ../shared/models/stories260K ] && targets+=(nbits)
cmake --build "$B" --target "${targets[@]}" -j "$JOBS"
for o in qgemm_x16_dotprod qgemm_x16_i8mm; do  # the kernels really use the instructions
  obj=$(find "$B" -name "$o.cc.o" | head -1)
  want=sdot; [ "$o" = qgemm_x16_i8mm ] && want=smmla
  n=$(llvm-objdump-22 -d "$obj" 2>/dev/null | grep -c "$want" || true)
  echo "-- $o: $n $want instructions"
  [ "$n" -ge 8 ] || { echo "expected $want in $obj"; exit 1; }
done

suite() {  # label, cpu, expected level, gtest filter, env...
  local label=$1 cpu=$2 level=$3 filter=$4; shift 4
  echo "-- $label (-cpu $cpu): test_kernels ($filter), expect $level"
  env NBITS_EXPECT_ARM64="$level" "$@" qemu-aarch64 -L "$SYSROOT" -cpu "$cpu" "$B/tests/test_kernels" \
    --gtest_brief=1 --gtest_filter="$filter"
}
# -cpu max runs every set (i8mm, dotprod, neon: each is supported there); cortex-a76 checks that
# HWCAP without i8mm picks dotprod; NBITS_ISA=neon only needs dispatch and the vector helpers again.
# The two full suites side by side (each QEMU process keeps one host core busy).
# shellcheck source=tools/qemu_jobs.sh
source tools/qemu_jobs.sh
job_start suite "dotprod + i8mm + sve" max i8mm "*" NBITS_EXPECT_SVE=1 NBITS_ISA=
job_start suite "dotprod only" cortex-a76 dotprod "*" NBITS_EXPECT_SVE=0 NBITS_ISA=
job_wait
suite "ARMv8.0 NEON (NBITS_ISA=neon)" max neon "Arm64Dispatch.*:VectorOps*" NBITS_ISA=neon

if [ "${NBITS_ARM64_E2E:-1}" = 1 ]; then
  echo "== arm64: stories260K greedy tokens (-cpu max, -cpu cortex-a76) vs the x86 build"
  model=../shared/models/stories260K
  if [ ! -d "$model" ]; then
    [ "${CI:-}" = true ] && { echo "missing $model"; exit 1; }
    echo "(skipped: $model not found)"
  else
    cmake --build "$B" --target nbits -j "$JOBS"
    X86=${NBITS_X86_BIN:-build/nbits}  # the x86 reference binary; built (current) unless given
    if [ -z "${NBITS_X86_BIN:-}" ]; then
      if [ -f build/build.ninja ]; then cmake --build build --target nbits -j "$JOBS"; else bash tools/build.sh release; fi
    fi
    # The NEON vector helpers compute the AVX2 helpers' bits (kernels/arm64/vector_ops_neon.cc).
    X86_DIR=$(dirname "$X86")
    if [ -f "$X86_DIR/libnbits_kernels.a" ]; then
      c++ -std=c++20 -O2 -Isrc tools/arm64/vector_ops_parity.cc "$X86_DIR/libnbits_kernels.a" \
        "$X86_DIR/libnbits_base.a" -lpthread -o "$B/vector_ops_parity_x86"
      clang++-22 --target=aarch64-linux-gnu -std=c++20 -O2 -march=armv8-a -ffp-contract=off -DNBITS_ARCH_ARM64=1 \
        -Isrc -fuse-ld=lld tools/arm64/vector_ops_parity.cc "$B/libnbits_kernels.a" "$B/libnbits_base.a" -lpthread \
        -o "$B/vector_ops_parity"
      "$B/vector_ops_parity_x86" > "$B/vector_ops_x86.txt"
      qemu max "$B/vector_ops_parity" > "$B/vector_ops_arm64.txt"
      diff "$B/vector_ops_x86.txt" "$B/vector_ops_arm64.txt" ||
        { echo "NEON vector helpers differ from the x86 build's (lines above: x86 <, arm64 >)"; exit 1; }
      echo "-- vector helpers and attention kernels: NEON == x86 AVX2 bit for bit ($(wc -l < "$B/vector_ops_x86.txt") lines)"
    else
      [ "${CI:-}" = true ] && { echo "missing $X86_DIR/libnbits_kernels.a (x86 build next to $X86)"; exit 1; }
      echo "(vector helper parity skipped: no $X86_DIR/libnbits_kernels.a)"
    fi
    ids() { python3 -c 'import json,sys; print(json.load(sys.stdin)["ids"])'; }
    for v in onnx_int4 onnx_int8 onnx_int4_asym; do
      for extra in "" "--scales fp16 --accuracy-level 4" "--scales fp16 --accuracy-level 0"; do
        # shellcheck disable=SC2086
        want=$("$X86" run -m "$model/$v" --ids 1 -n 16 $extra --format json | ids)
        for cpu in max cortex-a76; do
          # shellcheck disable=SC2086
          got=$(qemu "$cpu" "$B/nbits" run -m "$model/$v" --ids 1 -n 16 $extra --format json | ids)
          [ "$want" = "$got" ] || { echo "$v $extra (-cpu $cpu): arm64 $got != x86 $want"; exit 1; }
        done
        echo "-- $v ${extra:-(fp32 scales, accuracy level of the model)}: 16 greedy tokens equal (max, cortex-a76): $want"
      done
    done
    # GGUF table types (MXFP4, IQ4_NL / IQ4_XS, the IQ lattices; gpt-oss's MXFP4 experts): lut4 panels
    # on both sides (TBL here, the AVX2 lookups there), int8 activations: the same ids.
    tiny=${NBITS_CACHE:-$HOME/.cache/nbits}/gguf/tiny
    for m in quants iquants gpt-oss; do
      f=$tiny/tiny_$m.gguf
      if [ ! -f "$f" ]; then
        [ "${CI:-}" = true ] && { echo "missing $f (tools/setup_models.sh makes it)"; exit 1; }
        echo "(skipped: $f not found)"; continue
      fi
      want=$("$X86" run -m "$f" --ids 1 -n 12 --accuracy-level 4 --format json | ids)
      for cpu in max cortex-a76; do
        got=$(qemu "$cpu" "$B/nbits" run -m "$f" --ids 1 -n 12 --accuracy-level 4 --format json | ids)
        [ "$want" = "$got" ] || { echo "tiny_$m (-cpu $cpu): arm64 $got != x86 $want"; exit 1; }
      done
      echo "-- tiny_$m.gguf (lut4 panels): 12 greedy tokens equal (max, cortex-a76): $want"
    done
  fi
fi
echo "== arm64 leg passed in $(( $(date +%s) - t0 )) s"
