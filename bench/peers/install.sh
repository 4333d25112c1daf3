#!/usr/bin/env bash
# Installs the two peers from npm into bench/peers/.deps (git-ignored):
#   onnxruntime-node 1.30.0 (CPU library inside the package; install script skipped: it fetches GPU files)
#   node-llama-cpp 3.21.1   (prebuilt libllama/libggml CPU backends)
# Idempotent: does nothing when both are already there. Needs node >= 18 and npm.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
deps="$here/.deps"
mkdir -p "$deps"
cd "$deps"
[ -f package.json ] || echo '{"name":"nbits-peers","private":true}' > package.json
want_ort=1.30.0
want_llama=3.21.1
have() { node -e "process.exit(require('./node_modules/$1/package.json').version==='$2'?0:1)" 2>/dev/null; }
if have onnxruntime-node "$want_ort" && have node-llama-cpp "$want_llama"; then
  echo "peers already installed in $deps"
  exit 0
fi
ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund --ignore-scripts \
  "onnxruntime-node@$want_ort" "node-llama-cpp@$want_llama"
test -f node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1 || \
  { echo "install.sh: onnxruntime-node has no CPU library for this platform" >&2; exit 1; }
echo "peers installed in $deps"
