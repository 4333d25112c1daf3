#!/usr/bin/env bash
# Instruction counts under QEMU (a deterministic cost proxy; no board here) of one Qwen2.5-0.5B
# decoder layer's attention (14 query heads, 2 kv heads, head 64; tools/attention_count.cc): decode
# after 1k and 4k cached keys and a causal prefill, the portable kernels against the ISA's own,
# fp32 / fp16 / int8 KV cache.
#   bash tools/attention_count.sh riscv64 [CONTEXTS] [PREFILL]  RVV, needs build-rv/ (tools/riscv/test.sh)
#   bash tools/attention_count.sh arm64 [CONTEXTS] [PREFILL]    NEON, needs build-arm64/ (tools/arm64/test.sh)
# CONTEXTS defaults to "1024 4096", PREFILL to 512.
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:?usage: attention_count.sh riscv64|arm64 [CONTEXTS] [PREFILL]}
contexts=${2:-1024 4096}
prefill=${3:-512}
case $arch in
  riscv64)
    B=build-rv isa=rvv plugin_src=../shared/tools/riscv/insncount.c
    flags=(--target=riscv64-linux-gnu -march=rv64gcv_zba_zbb_zbs_zvl256b_zfh_zvfh -DNBITS_ARCH_RISCV=1)
    run=(qemu-riscv64 -L /usr/riscv64-linux-gnu -cpu "rv64,v=true,vlen=256,elen=64,vext_spec=v1.0,Zfh=true")
    arith=region_vec_arith mem=region_vec_mem ;;
  arm64)
    B=${NBITS_ARM64_BUILD:-build-arm64} isa=neon plugin_src=tools/arm64/insncount_a64.c
    flags=(--target=aarch64-linux-gnu -march=armv8-a -ffp-contract=off -DNBITS_ARCH_ARM64=1)
    run=(qemu-aarch64 -L /usr/aarch64-linux-gnu -cpu max)
    arith=region_simd_arith mem=region_simd_mem ;;
  *) echo "attention_count.sh: ARCH must be riscv64 or arm64 (got '$arch')"; exit 2 ;;
esac
[ -f "$B/libnbits_kernels.a" ] || { echo "no $B/libnbits_kernels.a: run the $arch leg's test.sh first"; exit 1; }
gcc -O2 -shared -fPIC -fvisibility=hidden -o "$B/libinsncount_attn.so" "$plugin_src"
clang++-22 "${flags[@]}" -std=c++20 -O2 -Isrc -fuse-ld=lld tools/attention_count.cc \
  "$B/libnbits_kernels.a" "$B/libnbits_base.a" -lpthread -o "$B/attention_count"
printf '%-8s %-5s %-7s %6s %14s %12s %12s %10s\n' mode cache isa n insns vec_arith vec_mem "MAC/insn"
count() {  # mode cache n; MAC = 128 per (query head, key) pair (q.k and p.V)
  local mode=$1 cache=$2 n=$3 pairs
  if [ "$mode" = decode ]; then pairs=$(( 14 * n )); else pairs=$(( 14 * n * (n + 1) / 2 )); fi
  for k in scalar "$isa"; do
    "${run[@]}" -plugin "$B/libinsncount_attn.so,out=$B/attn_counts.txt" "$B/attention_count" "$k" "$cache" \
      "$mode" "$n" > /dev/null
    get() { awk -v k="$1" '$1==k {print $2}' "$B/attn_counts.txt"; }
    local insns; insns=$(get region_insns)
    printf '%-8s %-5s %-7s %6s %14s %12s %12s %10.2f\n' "$mode" "$cache" "$k" "$n" "$insns" "$(get $arith)" \
      "$(get $mem)" "$(echo "$pairs * 128 / $insns" | bc -l)"
  done
}
for n in $contexts; do
  for cache in f32 f16 q8; do count decode "$cache" "$n"; done
done
count prefill f32 "$prefill"
