#!/usr/bin/env bash
# Measures nbits' ARM64 decode table on a board (Raspberry Pi 5 / Orange Pi 5 / Jetson / Graviton):
# builds natively (or uses NBITS_BIN=/path/to/cross-built/nbits), makes Qwen2.5-0.5B /
# SmolLM2-360M / TinyLlama-1.1B shaped models with `nbits make-model`, and measures greedy decode
# ms/token (median of REPS runs) at 1 and 4 threads, plus the achieved weight-streaming GB/s, for
# each kernel level (ISAS: "auto" = what HWCAP allows, "neon" = NBITS_ISA=neon, the ARMv8.0 path)
# and packed scale format (SCALES). Same table as scripts/k1-bench.sh. See docs/ARM64.md.
#   bash scripts/arm64-bench.sh              # everything (~30 min on a Pi 5, ~3 GB of disk)
#   MODELS="qwen2.5-0.5b:4" THREADS="4" ISAS="auto" SCALES="fp32" bash scripts/arm64-bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build-arm64-bench/models}
MODELS=${MODELS:-"qwen2.5-0.5b:4 qwen2.5-0.5b:8 smollm2-360m:4 smollm2-360m:8 tinyllama-1.1b:4"}
THREADS=${THREADS:-"1 4"}
TOKENS=${TOKENS:-64}   # greedy tokens per run (from [BOS])
REPS=${REPS:-3}        # runs per cell; the median decode ms/token is printed
SCALES=${SCALES:-"fp32 fp16"}
ISAS=${ISAS:-"auto neon"}

if [ -z "${NBITS_BIN:-}" ]; then
  [ "$(uname -m)" = aarch64 ] || { echo "not an aarch64 machine: set NBITS_BIN to a cross-built nbits"; exit 1; }
  CC_ARGS=()
  if command -v clang++ >/dev/null; then CC_ARGS=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++); fi
  # Baseline ARMv8-A for the glue; the dotprod / i8mm kernel files get their own -march and run
  # only when HWCAP says so, so one binary serves a Pi 4, a Pi 5 and a Graviton.
  cmake -S . -B build-arm64-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DNBITS_BUILD_TESTS=OFF \
    -DNBITS_BUILD_BENCH=OFF "${CC_ARGS[@]}" >/dev/null
  cmake --build build-arm64-bench --target nbits -j "$(nproc)"
  NBITS_BIN=build-arm64-bench/nbits
fi
echo "nbits: $NBITS_BIN"
grep -m1 -i "model name\|CPU part" /proc/cpuinfo || true
grep -m1 -i "^Features" /proc/cpuinfo || true   # asimddp = dotprod, i8mm, sve

cpus_for() { if [ "$1" = 1 ]; then echo 0; else echo "0-$(( $1 - 1 ))"; fi; }
isa_env() { if [ "$1" = auto ]; then echo ""; else echo "$1"; fi; }
decode_ms() {  # dir threads scales isa -> decode ms/token (nbits run's own timer), median of REPS
  for _ in $(seq "$REPS"); do
    NBITS_ISA=$(isa_env "$4") taskset -c "$(cpus_for "$2")" "$NBITS_BIN" run -m "$1" --ids 1 -n "$TOKENS" \
      -t "$2" --scales "$3" --format json |
      sed -n 's/.*"decode_ms_per_token":\([0-9.eE+-]*\).*/\1/p'
  done | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'
}

echo "== memory bandwidth and ms/token floors"
"$NBITS_BIN" roofline -t 1,4 || echo "(nbits roofline failed)"

weight_bytes() {  # dir scales
  "$NBITS_BIN" inspect "$1" --scales "$2" --format json | sed -n 's/.*"weight_bytes":\([0-9]*\).*/\1/p'
}
kernel_of() {  # dir isa: the M=1 MatMulNBits kernel dispatch picks
  NBITS_ISA=$(isa_env "$2") "$NBITS_BIN" inspect "$1" 2>/dev/null | grep -o 'qgemv_[a-z0-9_]*' | head -1
}

printf '\n%-16s %-5s %-6s %-6s %-22s %-8s %12s %10s %10s\n' model bits scales isa kernel threads ms/token \
  MB/token GB/s
for spec in $MODELS; do
  arch=${spec%%:*}; bits=${spec##*:}
  dir="$OUT/$arch-int$bits"
  [ -f "$dir/model.onnx" ] || "$NBITS_BIN" make-model --arch "$arch" --bits "$bits" --block 32 \
      --accuracy-level 4 -o "$dir" --quiet
  for isa in $ISAS; do
    kern=$(kernel_of "$dir" "$isa"); kern=${kern:-?}
    for sc in $SCALES; do
      bytes=$(weight_bytes "$dir" "$sc")
      [ -n "$bytes" ] || bytes=$(du -cb "$dir"/model.onnx* | tail -1 | cut -f1)  # fallback: file size
      for t in $THREADS; do
        ms=$(decode_ms "$dir" "$t" "$sc" "$isa")
        gbs=$(awk -v b="$bytes" -v ms="$ms" 'BEGIN {print b / (ms / 1000) / 1e9}')
        printf '%-16s %-5s %-6s %-6s %-22s %-8s %12.1f %10.1f %10.2f\n' "$arch" "int$bits" "$sc" "$isa" "$kern" \
          "$t" "$ms" "$(awk -v b="$bytes" 'BEGIN {print b / 1e6}')" "$gbs"
      done
    done
  done
done

# Prefill (M = 128: the GEMM kernels): SMMLA vs SDOT vs SMULL, one line per level this CPU has
# (NBITS_ISA refuses the others). Under QEMU the i8mm and SDOT GEMMs take about the same number of
# instructions (docs/ARM64.md), so this is the measurement that decides which one dispatch prefers.
PREFILL_MODEL=${PREFILL_MODEL:-qwen2.5-0.5b:4}
arch=${PREFILL_MODEL%%:*}; bits=${PREFILL_MODEL##*:}; dir="$OUT/$arch-int$bits"
[ -f "$dir/model.onnx" ] || "$NBITS_BIN" make-model --arch "$arch" --bits "$bits" --block 32 \
    --accuracy-level 4 -o "$dir" --quiet
printf '\n%-16s %-5s %-8s %-28s %-8s %14s\n' model bits isa "kernel (M=128)" threads "prefill tok/s"
for isa in i8mm dotprod neon; do
  kern=$(NBITS_ISA=$isa "$NBITS_BIN" inspect "$dir" 2>/dev/null | grep -o 'qgemv_[a-z0-9_]*' | head -1) || continue
  [ -n "$kern" ] || continue
  gemm=qgemm_q${bits}x16_4x8_$isa
  for t in $THREADS; do
    tps=$(NBITS_ISA=$isa taskset -c "$(cpus_for "$t")" "$NBITS_BIN" bench -m "$dir" -t "$t" -p 128 -n 4 \
          --reps "$REPS" --format json | sed -n 's/.*"prefill_tok_s": *\([0-9.eE+-]*\).*/\1/p' | head -1)
    printf '%-16s %-5s %-8s %-28s %-8s %14.1f\n' "$arch" "int$bits" "$isa" "$gemm" "$t" "${tps:-0}"
  done
done
