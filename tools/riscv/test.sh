#!/usr/bin/env bash
# RISC-V leg: cross-builds the kernel tests for riscv64 (clang-22 + lld-22, GCC 12 sysroot) and
# runs them under qemu-riscv64 (RVV 1.0, VLEN 256) in every mode the kernels have:
#   1. IME emulated (vmadot expanded to exact scalar code): IME + RVV + reference kernels
#   2. same binary, NBITS_ISA=rvv: RVV kernels chosen, IME hidden
#   3. both again with rvv_ta_all_1s/rvv_ma_all_1s (catches code that relies on tail lanes)
#   4. real-vmadot build: the SIGILL-guarded probe must report no IME under QEMU and dispatch
#      must fall back to RVV; the IME kernel object must contain smt.vmadotsu words.
#   5. stories260K int4/int8/int4_asym: 16 greedy tokens under QEMU == the x86 build's (build/nbits),
#      also with --scales fp16 at accuracy levels 4 and 0;
#      NBITS_RV_E2E=0 skips it (it cross-builds the whole program).
# Self-contained: installs its Debian packages when missing (as root). Usage:
#   bash tools/riscv/test.sh            (from anywhere; builds in build-rv/ and build-rv-hw/)
set -euo pipefail
cd "$(dirname "$0")/../.."
t0=$(date +%s)

pkgs=(cmake ninja-build clang-22 lld-22 llvm-22 g++-riscv64-linux-gnu qemu-user libgtest-dev nlohmann-json3-dev)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" != 0 ] && SUDO=sudo
  # clang-22/lld-22/llvm-22 come from bookworm-security (enabled on stock Debian 12).
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

JOBS=${NBITS_JOBS:-$(nproc)}
LAUNCHER=()
command -v ccache >/dev/null && LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
SYSROOT=/usr/riscv64-linux-gnu
CPU="rv64,v=true,vlen=256,elen=64,vext_spec=v1.0,Zfh=true,zba=true,zbb=true,zbs=true"
CPU_ONES="$CPU,rvv_ta_all_1s=true,rvv_ma_all_1s=true"
qemu() { local cpu=$1; shift; qemu-riscv64 -L "$SYSROOT" -cpu "$cpu" "$@"; }

configure() {  # dir, IME_EMULATE, extra args...
  local dir=$1 emu=$2; shift 2
  cmake -S . -B "$dir" -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/riscv64-clang.cmake \
    -DCMAKE_BUILD_TYPE=Release -DNBITS_WERROR=ON -DNBITS_IME_EMULATE="$emu" -DNBITS_BUILD_BENCH=OFF \
    "${LAUNCHER[@]}" "$@" >/dev/null
}
# Kernel test binaries: ours (tests/rvv) and the table-driven kernel tests (tests/kernels).
# NBITS_RV_TARGETS="test_rvv" narrows the set.
if [ -n "${NBITS_RV_TARGETS:-}" ]; then read -r -a targets <<<"$NBITS_RV_TARGETS"; else
  targets=(test_rvv)
  [ -d tests/kernels ] && targets+=(test_kernels)
fi

echo "== riscv64: cross build (IME emulated)"
configure build-rv ON -DNBITS_BUILD_CLI=ON
cmake --build build-rv --target "${targets[@]}" -j "$JOBS"

run_suite() {  # label, cpu, gtest filter, env...
  local label=$1 cpu=$2 filter=$3; shift 3
  for t in "${targets[@]}"; do
    echo "-- $label: $t"
    env "$@" qemu-riscv64 -L "$SYSROOT" -cpu "$cpu" "build-rv/tests/$t" --gtest_brief=1 --gtest_filter="$filter"
  done
}
# Two suites at a time: each QEMU process keeps one host core busy. NBITS_ISA=rvv only hides IME
# from the MatMulNBits dispatch: the attention kernels (RVV whatever NBITS_ISA says) run in the
# two IME-emulated suites and are left out of the RVV-only ones, where they would run again alike.
# shellcheck source=tools/qemu_jobs.sh
source tools/qemu_jobs.sh
job_start run_suite "IME emulated" "$CPU" '*' NBITS_ISA=
job_start run_suite "RVV only" "$CPU" '-*Attention*' NBITS_ISA=rvv
job_wait
job_start run_suite "IME emulated, tail/mask all-1s" "$CPU_ONES" '*' NBITS_ISA=
job_start run_suite "RVV only, tail/mask all-1s" "$CPU_ONES" '-*Attention*' NBITS_ISA=rvv
job_wait

echo "== riscv64: real-vmadot build (probe must find no IME under QEMU)"
configure build-rv-hw OFF -DNBITS_BUILD_CLI=OFF
cmake --build build-rv-hw --target test_rvv -j "$JOBS"
NBITS_EXPECT_IME=0 qemu "$CPU" build-rv-hw/tests/test_rvv --gtest_brief=1
obj=$(find build-rv-hw -name 'qgemm_t16_ime.cc.o' | head -1)
n=$(llvm-objdump-22 -d --mattr=+v,+xsmtvdot "$obj" | grep -c 'smt.vmadotsu' || true)
echo "-- $obj: $n smt.vmadotsu instructions"
[ "$n" -ge 12 ] || { echo "expected the IME kernel to contain vmadotsu (found $n)"; exit 1; }

if [ "${NBITS_RV_E2E:-1}" = 1 ]; then
  echo "== riscv64: stories260K greedy tokens (IME emulated and RVV only) vs the x86 build"
  model=../shared/models/stories260K
  if [ ! -d "$model" ]; then
    [ "${CI:-}" = true ] && { echo "missing $model"; exit 1; }
    echo "(skipped: $model not found)"
  else
    cmake --build build-rv --target nbits -j "$JOBS"
    X86=${NBITS_X86_BIN:-build/nbits}  # the x86 reference binary; built (current) unless given
    if [ -z "${NBITS_X86_BIN:-}" ]; then
      if [ -f build/build.ninja ]; then cmake --build build --target nbits -j "$JOBS"; else bash tools/build.sh release; fi
    fi
    ids() { python3 -c 'import json,sys; print(json.load(sys.stdin)["ids"])'; }
    for v in onnx_int4 onnx_int8 onnx_int4_asym; do
      want=$("$X86" run -m "$model/$v" --ids 1 -n 16 --format json | ids)
      for isa in "" rvv; do
        got=$(NBITS_ISA=$isa qemu "$CPU" build-rv/nbits run -m "$model/$v" --ids 1 -n 16 --format json | ids)
        [ "$want" = "$got" ] || { echo "$v (NBITS_ISA=$isa): riscv64 $got != x86 $want"; exit 1; }
      done
      echo "-- $v: 16 greedy tokens equal (IME emulated, RVV only): $want"
      for acc in 4 0; do  # fp16 scales: CompInt8 (IME / RVV int8) and CompFp32 (RVV fp32)
        want=$("$X86" run -m "$model/$v" --ids 1 -n 16 --scales fp16 --accuracy-level $acc --format json | ids)
        for isa in "" rvv; do
          got=$(NBITS_ISA=$isa qemu "$CPU" build-rv/nbits run -m "$model/$v" --ids 1 -n 16 --scales fp16 \
                --accuracy-level $acc --format json | ids)
          [ "$want" = "$got" ] || { echo "$v fp16 acc$acc (NBITS_ISA=$isa): riscv64 $got != x86 $want"; exit 1; }
        done
        echo "-- $v --scales fp16 --accuracy-level $acc: equal (IME emulated, RVV only): $want"
      done
    done
    # GGUF table types (MXFP4, IQ4_NL / IQ4_XS, the IQ lattices; gpt-oss's MXFP4 experts) as lut4
    # panels (q4lt16 / q4ln16: vrgather), int8 activations.
    tiny=${NBITS_CACHE:-$HOME/.cache/nbits}/gguf/tiny
    for m in quants iquants gpt-oss; do
      f=$tiny/tiny_$m.gguf
      if [ ! -f "$f" ]; then
        [ "${CI:-}" = true ] && { echo "missing $f (tools/setup_models.sh makes it)"; exit 1; }
        echo "(skipped: $f not found)"; continue
      fi
      want=$("$X86" run -m "$f" --ids 1 -n 12 --accuracy-level 4 --format json | ids)
      for isa in "" rvv; do
        got=$(NBITS_ISA=$isa qemu "$CPU" build-rv/nbits run -m "$f" --ids 1 -n 12 --accuracy-level 4 --format json | ids)
        [ "$want" = "$got" ] || { echo "tiny_$m (NBITS_ISA=$isa): riscv64 $got != x86 $want"; exit 1; }
      done
      echo "-- tiny_$m.gguf (lut4 panels): 12 greedy tokens equal (IME emulated, RVV only): $want"
    done
  fi
fi
echo "== riscv64 leg passed in $(( $(date +%s) - t0 )) s"
