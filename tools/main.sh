#!/usr/bin/env bash
# The main job: build, then generate and benchmark on the default model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bash tools/build.sh release
model=${NBITS_MODEL:-../shared/models/stories260K/onnx_int4}
if [ ! -f "$model/model.onnx" ]; then
  model=build/models/tiny-int4
  ./build/nbits make-model --arch custom --hidden 64 --layers 2 --heads 4 --kv-heads 2 --intermediate 128 \
     --vocab 512 --bits 4 --block 32 -o "$model"
fi
./build/nbits run -m "$model" -p "Once upon a time" -n 64
./build/nbits bench -m "$model" -t 1 -p 32 -n 32
