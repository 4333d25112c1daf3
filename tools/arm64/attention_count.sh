#!/usr/bin/env bash
# Instruction counts under qemu-aarch64 (a deterministic cost proxy; no board here) of one
# Qwen2.5-0.5B decoder layer's attention (14 query heads, 2 kv heads, head 64): decode after 1k and
# 4k cached keys and a causal prefill, the portable kernels against NEON, fp32 / fp16 / int8 KV
# cache (tools/attention_count.cc; the riscv64 twin is tools/riscv/attention_count.sh).
# Needs the cross build of tools/arm64/test.sh (build-arm64/, NBITS_ARM64_BUILD overrides).
#   bash tools/arm64/attention_count.sh [CONTEXTS] [PREFILL]   (defaults "1024 4096" and 512)
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${NBITS_ARM64_BUILD:-build-arm64}
contexts=${1:-1024 4096}
prefill=${2:-512}
[ -f "$B/libnbits_kernels.a" ] || { echo "run tools/arm64/test.sh first (needs $B)"; exit 1; }
gcc -O2 -shared -fPIC -fvisibility=hidden -o "$B/libinsncount_a64.so" tools/arm64/insncount_a64.c
clang++-22 --target=aarch64-linux-gnu -std=c++20 -O2 -march=armv8-a -ffp-contract=off \
  -DNBITS_ARCH_ARM64=1 -Isrc -fuse-ld=lld tools/attention_count.cc \
  "$B/libnbits_kernels.a" "$B/libnbits_base.a" -lpthread -o "$B/attention_count"
printf '%-8s %-5s %-7s %6s %14s %12s %12s %10s\n' mode cache isa n insns simd_arith simd_mem "MAC/insn"
count() {  # mode cache n
  local mode=$1 cache=$2 n=$3 pairs
  if [ "$mode" = decode ]; then pairs=$(( 14 * n )); else pairs=$(( 14 * n * (n + 1) / 2 )); fi
  for isa in scalar neon; do
    qemu-aarch64 -L /usr/aarch64-linux-gnu -cpu max -plugin "$B/libinsncount_a64.so,out=$B/attn_counts.txt" \
      "$B/attention_count" "$isa" "$cache" "$mode" "$n" > /dev/null
    get() { awk -v k="$1" '$1==k {print $2}' "$B/attn_counts.txt"; }
    local insns; insns=$(get region_insns)
    printf '%-8s %-5s %-7s %6s %14s %12s %12s %10.2f\n' "$mode" "$cache" "$isa" "$n" "$insns" \
      "$(get region_simd_arith)" "$(get region_simd_mem)" "$(echo "$pairs * 128 / $insns" | bc -l)"
  done
}
for n in $contexts; do
  for cache in f32 f16 q8; do count decode "$cache" "$n"; done
done
count prefill f32 "$prefill"
