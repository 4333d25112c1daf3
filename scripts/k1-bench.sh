#!/usr/bin/env bash
# Reproduces nbits' SpacemiT K1 decode table on a K1 board (BPI-F3, Orange Pi RV2, ...):
# builds natively (or uses NBITS_BIN=/path/to/cross-built/nbits), makes Qwen2.5-0.5B /
# SmolLM2-360M / TinyLlama-1.1B shaped models with `nbits make-model`, and measures greedy
# decode ms/token (median of 3 runs) at 1 and 4 threads pinned to cores 0-3 (the only cores with IME), plus the
# achieved weight-streaming GB/s, with the packed scales as fp32 (exact ORT numerics) and as fp16
# (`--scales fp16`: ~10% fewer bytes per token at int4 block 32). See docs/K1.md.
#   bash scripts/k1-bench.sh               # everything (~35 min, ~3 GB of disk for models)
#   MODELS="qwen2.5-0.5b:4" THREADS="4" SCALES="fp32 fp16" bash scripts/k1-bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build-k1/models}
MODELS=${MODELS:-"qwen2.5-0.5b:4 qwen2.5-0.5b:8 smollm2-360m:4 smollm2-360m:8 tinyllama-1.1b:4"}
THREADS=${THREADS:-"1 4"}
TOKENS=${TOKENS:-64}  # greedy tokens per run (from [BOS])
REPS=${REPS:-3}       # runs per cell; the median decode ms/token is printed
SCALES=${SCALES:-"fp32 fp16"}  # packed scale formats (nbits run --scales)

if [ -z "${NBITS_BIN:-}" ]; then
  CC_ARGS=()
  if command -v clang++ >/dev/null; then CC_ARGS=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++); fi
  cmake -S . -B build-k1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DNBITS_BUILD_TESTS=OFF -DNBITS_BUILD_BENCH=OFF \
    -DNBITS_IME_EMULATE=OFF "${CC_ARGS[@]}" \
    -DCMAKE_CXX_FLAGS="-march=rv64gcv_zba_zbb_zbs_zvl256b_zfh_zvfh -mtune=spacemit-x60" >/dev/null
  cmake --build build-k1 --target nbits -j "$(nproc)"
  NBITS_BIN=build-k1/nbits
fi
echo "nbits: $NBITS_BIN"; grep -m1 -i "model name\|uarch" /proc/cpuinfo || true
echo "cores 0-3 are used (cluster 0: IME); IME probe result is in: $NBITS_BIN inspect / --profile"

cpus_for() { if [ "$1" = 1 ]; then echo 0; else echo "0-$(( $1 - 1 ))"; fi; }
decode_ms() {  # dir threads scales -> decode ms/token (nbits run's own decode timer), median of REPS
  for _ in $(seq "$REPS"); do
    taskset -c "$(cpus_for "$2")" "$NBITS_BIN" run -m "$1" --ids 1 -n "$TOKENS" -t "$2" --scales "$3" \
      --format json |
      sed -n 's/.*"decode_ms_per_token":\([0-9.eE+-]*\).*/\1/p'
  done | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'
}

echo "== memory bandwidth and ms/token floors (cores 0-3)"
taskset -c 0-3 "$NBITS_BIN" roofline -t 1,4 || echo "(nbits roofline failed)"

# Bytes one decode step streams: the session's packed weights (+ other initializers) for a scale format.
weight_bytes() {  # dir scales
  "$NBITS_BIN" inspect "$1" --scales "$2" --format json | sed -n 's/.*"weight_bytes":\([0-9]*\).*/\1/p'
}

printf '\n%-16s %-5s %-6s %-8s %12s %10s %10s\n' model bits scales threads ms/token MB/token GB/s
for spec in $MODELS; do
  arch=${spec%%:*}; bits=${spec##*:}
  dir="$OUT/$arch-int$bits"
  [ -f "$dir/model.onnx" ] || "$NBITS_BIN" make-model --arch "$arch" --bits "$bits" --block 32 \
      --accuracy-level 4 -o "$dir" --quiet
  for sc in $SCALES; do
    bytes=$(weight_bytes "$dir" "$sc")
    [ -n "$bytes" ] || bytes=$(du -cb "$dir"/model.onnx* | tail -1 | cut -f1)  # fallback: file size
    for t in $THREADS; do
      ms=$(decode_ms "$dir" "$t" "$sc")
      gbs=$(awk -v b="$bytes" -v ms="$ms" 'BEGIN {print b / (ms / 1000) / 1e9}')
      printf '%-16s %-5s %-6s %-8s %12.1f %10.1f %10.2f\n' "$arch" "int$bits" "$sc" "$t" "$ms" \
        "$(awk -v b="$bytes" 'BEGIN {print b / 1e6}')" "$gbs"
    done
  done
done
