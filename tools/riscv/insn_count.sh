#!/usr/bin/env bash
# Instruction counts under QEMU (a deterministic cost proxy; no K1 here) of one Qwen2.5-0.5B
# decoder layer's MatMulNBits at M=1: IME (t16), RVV (n16) and the scalar reference, int4 / int8 /
# lut4 (int8 codes of 15 levels, GGUF MXFP4's, packed as 4-bit table indices), with packed MB.
# Needs build-rv/ from tools/riscv/test.sh (IME emulated) and ../shared/tools/riscv/insncount.c.
# The emulated vmadot is a fixed 760-instruction sequence (4 of them whole-register moves):
# counts are corrected to 1 instruction per vmadot, as on hardware.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=build-rv
PLUGIN_SRC=../shared/tools/riscv/insncount.c
[ -f $B/libnbits_kernels.a ] || { echo "run tools/riscv/test.sh first (needs $B)"; exit 1; }
gcc -O2 -shared -fPIC -fvisibility=hidden -o $B/libinsncount.so "$PLUGIN_SRC"
clang++-22 --target=riscv64-linux-gnu -std=c++20 -O2 -march=rv64gcv_zba_zbb_zbs_zvl256b_zfh_zvfh \
  -DNBITS_ARCH_RISCV=1 -DIME_EMULATE=1 -Isrc -fuse-ld=lld tools/riscv/insn_count.cc \
  $B/libnbits_kernels.a $B/libnbits_base.a -lpthread -o $B/insn_count
CPU="rv64,v=true,vlen=256,elen=64,vext_spec=v1.0,Zfh=true"
EMU=760
printf '%-10s %-5s %-6s %14s %12s %12s %10s %8s %8s\n' kernels bits scales insns vec_arith vec_mem vmadot "MAC/insn" MB
for scales in fp32 fp16; do
for bits in 4 8 lut4; do
  macs=$(( (1152*896 + 896*896 + 9728*896 + 896*4864) ))
  for k in t16_ime_int8 n16_rvv_int8 ref_int8; do
    out=$(qemu-riscv64 -L /usr/riscv64-linux-gnu -cpu "$CPU" -plugin $B/libinsncount.so,out=$B/counts.txt \
          $B/insn_count "$k" "$bits" "$scales")
    get() { awk -v k="$1" '$1==k {print $2}' $B/counts.txt; }
    insns=$(get region_insns); va=$(get region_vec_arith); vm=$(get region_vec_mem); vd=0
    if [ "$k" = t16_ime_int8 ]; then
      vd=$(echo "$out" | awk '$1=="vmadot_if_ime" {print $2}')
      insns=$(( insns - vd * (EMU - 1) )); vm=$(( vm - vd * 4 ))
    fi
    mb=$(echo "$out" | awk '{for (i = 1; i <= NF; ++i) if ($i ~ /^bytes=/) s += substr($i, 7)} END {printf "%.2f", s / 1e6}')
    label=$bits; [ "$bits" = lut4 ] || label=int$bits
    printf '%-10s %-5s %-6s %14s %12s %12s %10s %8.1f %8s\n' "${k%_int8}" "$label" "$scales" "$insns" "$va" "$vm" \
      "$vd" "$(echo "$macs / $insns" | bc -l)" "$mb"
  done
done
done
