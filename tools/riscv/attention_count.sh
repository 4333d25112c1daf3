#!/usr/bin/env bash
# Instruction counts under QEMU (a deterministic cost proxy; no K1 here) of one Qwen2.5-0.5B decoder
# layer's attention (14 query heads, 2 kv heads, head 64): decode after 1k and 4k cached keys and a
# causal prefill, scalar (portable) kernels against RVV, fp32 / fp16 / int8 KV cache.
# Needs build-rv/ from tools/riscv/test.sh and ../shared/tools/riscv/insncount.c.
#   bash tools/riscv/attention_count.sh [CONTEXTS] [PREFILL]   (defaults "1024 4096" and 512)
set -euo pipefail
cd "$(dirname "$0")/../.."
B=build-rv
contexts=${1:-1024 4096}
prefill=${2:-512}
PLUGIN_SRC=../shared/tools/riscv/insncount.c
[ -f $B/libnbits_kernels.a ] || { echo "run tools/riscv/test.sh first (needs $B)"; exit 1; }
gcc -O2 -shared -fPIC -fvisibility=hidden -o $B/libinsncount.so "$PLUGIN_SRC"
clang++-22 --target=riscv64-linux-gnu -std=c++20 -O2 -march=rv64gcv_zba_zbb_zbs_zvl256b_zfh_zvfh \
  -DNBITS_ARCH_RISCV=1 -Isrc -fuse-ld=lld tools/attention_count.cc \
  $B/libnbits_kernels.a $B/libnbits_base.a -lpthread -o $B/attention_count
CPU="rv64,v=true,vlen=256,elen=64,vext_spec=v1.0,Zfh=true"
# Multiply-adds of the layer: q.k and p.V for every (query head, key) pair.
printf '%-8s %-5s %-7s %6s %14s %12s %12s %10s\n' mode cache isa n insns vec_arith vec_mem "MAC/insn"
count() {  # mode cache n
  local mode=$1 cache=$2 n=$3 pairs
  if [ "$mode" = decode ]; then pairs=$(( 14 * n )); else pairs=$(( 14 * n * (n + 1) / 2 )); fi
  for isa in scalar rvv; do
    qemu-riscv64 -L /usr/riscv64-linux-gnu -cpu "$CPU" -plugin $B/libinsncount.so,out=$B/attn_counts.txt \
      $B/attention_count "$isa" "$cache" "$mode" "$n" > /dev/null
    get() { awk -v k="$1" '$1==k {print $2}' $B/attn_counts.txt; }
    local insns; insns=$(get region_insns)
    printf '%-8s %-5s %-7s %6s %14s %12s %12s %10.2f\n' "$mode" "$cache" "$isa" "$n" "$insns" \
      "$(get region_vec_arith)" "$(get region_vec_mem)" "$(echo "$pairs * 128 / $insns" | bc -l)"
  done
}
for n in $contexts; do
  for cache in f32 f16 q8; do count decode "$cache" "$n"; done
done
count prefill f32 "$prefill"
