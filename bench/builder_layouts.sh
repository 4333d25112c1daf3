#!/usr/bin/env bash
# Decode/prefill of the real onnxruntime-genai builder's int4 (GroupQueryAttention) and fp16
# (MultiHeadAttention + RotaryEmbedding, present = Concat) CPU exports of the same random
# Qwen2.5-0.5B-shaped model, side by side: bash bench/builder_layouts.sh [THREADS] [OUT_DIR]
# (LONG=0 skips the 2048-token context runs.)
# Needs the venv of tools/setup_models.sh; the models (~1.3 GB) go to OUT_DIR (default
# ~/.cache/nbits/qwen05b-layouts) and are made once.
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-1,2}
out=${2:-${NBITS_CACHE:-$HOME/.cache/nbits}/qwen05b-layouts}
py=${NBITS_CACHE:-$HOME/.cache/nbits}/venv/bin/python
[ -x "$py" ] || bash tools/setup_models.sh
mkdir -p "$out"
if [ ! -f "$out/hf/config.json" ]; then
  "$py" bench/random_hf.py "$out/hf" Qwen2Config hidden_size=896 intermediate_size=4864 num_hidden_layers=24 \
    num_attention_heads=14 num_key_value_heads=2 vocab_size=151936 max_position_embeddings=32768 \
    tie_word_embeddings=True rope_theta=1e6
  cp ../shared/tokenizers/qwen2.5/tokenizer* "$out/hf/"
fi
for p in int4 fp16; do
  [ -f "$out/$p/genai_config.json" ] || "$py" -m onnxruntime_genai.models.builder -i "$out/hf" -o "$out/$p" -p "$p" \
    -e cpu -c "$out/hf_cache" > "$out/$p.log" 2>&1
done
[ -x build/nbits ] || bash tools/build.sh release
for p in int4 fp16; do build/nbits bench -m "$out/$p" -t "$threads" -p 32 -n 32; done
# Long context: decode after a 2048-token prompt, the int4 export with its fp32 cache and with
# --kv-cache f16 (half the KV bytes), and the fp16 export (fp16 cache, MHA fused into the GQA path).
if [ "${LONG:-1}" = 1 ]; then
  for kv in model f16; do build/nbits bench -m "$out/int4" -t "$threads" -p 2048 -n 32 --reps 1 --kv-cache "$kv"; done
  build/nbits bench -m "$out/fp16" -t "$threads" -p 2048 -n 32 --reps 1
fi
