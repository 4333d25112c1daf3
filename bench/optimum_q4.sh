#!/usr/bin/env bash
# An onnx-community-style q4 export (optimum-onnx, then MatMulNBitsQuantizer block 32 symmetric:
# tools/optimum_models/make.py's export and to_q4) against the onnxruntime-genai builder's int4
# export of the same random Qwen2.5-0.5B-shaped model (bench/builder_layouts.sh makes both the
# Hugging Face folder and the int4 export), side by side: bash bench/optimum_q4.sh [THREADS] [OUT_DIR]
# The q4 file runs with --accuracy-level 4 (it says 0), its tied lm_head as stored (fp32) and
# re-quantized at load (--requantize-float q8 / q4; the builder quantizes it to int4 itself).
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-1,2}
out=${2:-${NBITS_CACHE:-$HOME/.cache/nbits}/qwen05b-layouts}
cache=${NBITS_CACHE:-$HOME/.cache/nbits}
py=$cache/venv/bin/python
[ -f "$cache/optimum-overlay/optimum/__init__.py" ] || bash tools/setup_models.sh
[ -f "$out/int4/genai_config.json" ] || LONG=0 bash bench/builder_layouts.sh "$threads" "$out" > /dev/null
if [ ! -f "$out/optimum/onnx/model_q4.onnx" ]; then
  PYTHONPATH="$cache/optimum-overlay:tools/optimum_models" "$py" -c '
import os, sys, onnx, make
hf, folder = sys.argv[1], sys.argv[2]
work = folder + ".work"
os.makedirs(work, exist_ok=True)
make.export(hf, folder, work)
m = make.to_q4(onnx.load(os.path.join(folder, "onnx", "model.onnx")))
make.save(m, os.path.join(folder, "onnx", "model_q4.onnx"))
os.remove(os.path.join(folder, "onnx", "model.onnx"))
' "$out/hf" "$out/optimum"
fi
[ -x build/nbits ] || bash tools/build.sh release
build/nbits bench -m "$out/int4" -t "$threads" -p 64 -n 32
for r in keep q8 q4; do
  build/nbits bench -m "$out/optimum/onnx/model_q4.onnx" -t "$threads" -p 64 -n 32 --accuracy-level 4 --requantize-float "$r"
done
