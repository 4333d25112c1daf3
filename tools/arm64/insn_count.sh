#!/usr/bin/env bash
# Instruction counts under qemu-aarch64 (a deterministic cost proxy; no board here) of one
# Qwen2.5-0.5B decoder layer's MatMulNBits (14.9 M weights) at M=1 (decode) and M=128 (prefill),
# block 32, per arm64 kernel set, int4 / int8 / lut4 (int8 codes of MXFP4's 15 levels: 4-bit table
# indices where the set reads lut4). Needs the cross build of tools/arm64/test.sh
# (build-arm64/, NBITS_ARM64_BUILD overrides); the plugin is tools/arm64/insncount_a64.c.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${NBITS_ARM64_BUILD:-build-arm64}
[ -f "$B/libnbits_kernels.a" ] || { echo "run tools/arm64/test.sh first (needs $B)"; exit 1; }
gcc -O2 -shared -fPIC -fvisibility=hidden -o "$B/libinsncount_a64.so" tools/arm64/insncount_a64.c
clang++-22 --target=aarch64-linux-gnu -std=c++20 -O2 -march=armv8-a -ffp-contract=off \
  -DNBITS_ARCH_ARM64=1 -Isrc -fuse-ld=lld tools/arm64/insn_count.cc \
  "$B/libnbits_kernels.a" "$B/libnbits_base.a" -lpthread -o "$B/insn_count"
MS=${MS:-"1 128"}
SETS=${SETS:-"x16_i8mm_int8 x16_dotprod_int8 x16_neon_int8 x16_neon_fp32 ref_int8"}
macs=$(( 1152*896 + 896*896 + 9728*896 + 896*4864 ))
printf '%-18s %-5s %-4s %-28s %14s %12s %12s %10s %10s %9s\n' kernels bits M "kernel (M)" insns simd_arith \
  simd_mem dot mmla MAC/insn
for M in $MS; do
  for bits in ${BITS:-4 8 lut4}; do
    for k in $SETS; do
      [ "$k" = ref_int8 ] && [ "$M" != 1 ] && continue  # the scalar reference at M=128: ~100 G instructions
      out=$(qemu-aarch64 -L /usr/aarch64-linux-gnu -cpu max -plugin "$B/libinsncount_a64.so,out=$B/counts.txt" \
            "$B/insn_count" "$k" "$bits" "$M")
      get() { awk -v k="$1" '$1==k {print $2}' "$B/counts.txt"; }
      insns=$(get region_insns)
      kern=$(echo "$out" | awk 'NR==1 {print $1}')
      label=$bits; [ "$bits" = lut4 ] || label=int$bits
      printf '%-18s %-5s %-4s %-28s %14s %12s %12s %10s %10s %9.2f\n' "$k" "$label" "$M" "$kern" "$insns" \
        "$(get region_simd_arith)" "$(get region_simd_mem)" "$(get region_dot)" "$(get region_mmla)" \
        "$(echo "$macs * $M / $insns" | bc -l)"
    done
  done
done
