#!/usr/bin/env bash
# Separate q/k/v vs packed QKV: one random Qwen3-0.6B-shaped model exported int4 (the defaults:
# block 32, accuracy_level 4) by onnxruntime-genai builder 0.11.2 (separate q/k/v MatMulNBits into
# GroupQueryAttention, because of Qwen3's q/k norms) and by builder 0.18 (packed QKV), decoded side
# by side: bash bench/qkv_layouts.sh [THREADS] [OUT_DIR]
# Needs the venv and the 0.11.2 builder of tools/setup_models.sh; models (~1 GB) go to OUT_DIR
# (default ~/.cache/nbits/qwen3-qkv-layouts) and are made once.
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-1,2}
cache=${NBITS_CACHE:-$HOME/.cache/nbits}
out=${2:-$cache/qwen3-qkv-layouts}
py=$cache/venv/bin/python
old=${NBITS_BUILDER_MODELS:-$cache/builder-models}/builders/0.11.2
[ -x "$py" ] && [ -d "$old/onnxruntime_genai" ] || bash tools/setup_models.sh
mkdir -p "$out"
if [ ! -f "$out/hf/config.json" ]; then
  "$py" bench/random_hf.py "$out/hf" Qwen3Config hidden_size=1024 intermediate_size=3072 num_hidden_layers=28 \
    num_attention_heads=16 num_key_value_heads=8 head_dim=128 vocab_size=151936 max_position_embeddings=40960 \
    tie_word_embeddings=True rope_theta=1e6
  cp ../shared/tokenizers/qwen2.5/tokenizer* "$out/hf/"
fi
[ -f "$out/packed/genai_config.json" ] || "$py" -m onnxruntime_genai.models.builder -i "$out/hf" -o "$out/packed" \
  -p int4 -e cpu -c "$out/hf_cache" > "$out/packed.log" 2>&1
[ -f "$out/separate/genai_config.json" ] || PYTHONPATH="$old" "$py" -m onnxruntime_genai.models.builder \
  -i "$out/hf" -o "$out/separate" -p int4 -e cpu -c "$out/hf_cache" > "$out/separate.log" 2>&1
[ -x build/nbits ] || bash tools/build.sh release
for l in packed separate; do build/nbits bench -m "$out/$l" -t "$threads" -p 32 -n 32; done
