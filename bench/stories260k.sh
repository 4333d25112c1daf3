#!/usr/bin/env bash
# stories260K decode speed and peak memory per variant (the runtime issue's table).
#   bash bench/stories260k.sh [NBITS_BIN] [THREADS]
# Prints a markdown table: decode ms/token (median over every decoded token of 5 reps),
# prefill tok/s (16-token prompt), peak RSS of the whole `nbits bench` process (/usr/bin/time).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/nbits}
threads=${2:-1}
models=${NBITS_SHARED:-../shared}/models/stories260K
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
echo "| variant | decode ms/token (p10-p90) | prefill tok/s | peak RSS MiB | MatMulNBits kernel (M=1) |"
echo "|---|---|---|---|---|"
for v in fp32 int4 int4_asym int8 int4_acc0 int4_asym_acc0 int8_acc0 int4_extdata; do
  dir=$models/onnx_$v
  [ -f "$dir/model.onnx" ] || { echo "missing $dir" >&2; continue; }
  out=$(mktemp)
  /usr/bin/time -f "%M" -o "$out.rss" "$bin" bench -m "$dir" -t "$threads" -p 16 -n 64 --reps 5 \
    --bandwidth-gbs 10 --format json > "$out"
  python3 - "$v" "$out" "$out.rss" <<'PY'
import json, sys
v, path, rss = sys.argv[1:]
r = json.load(open(path))["runs"][0]
kern = ", ".join(f"{k} x{n}" for k, n in r.get("matmul_kernels_at_load", {}).items()) or "-"
print(f"| {v} | {r['decode_ms_median']:.3f} ({r['decode_ms_p10']:.3f}-{r['decode_ms_p90']:.3f}) | "
      f"{r['prefill_tok_s']:.0f} | {int(open(rss).read().split()[-1]) / 1024:.1f} | {kern} |")
PY
  rm -f "$out" "$out.rss"
done
