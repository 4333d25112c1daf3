#!/usr/bin/env bash
# The test command: installs what is missing, then builds and runs every suite:
#   0. cached, made while the release build compiles: the real onnxruntime-genai builder's exports
#      of small models of every family and precision, with ONNX Runtime references
#      (tools/setup_models.sh)
#   1. release build (-Werror) + ctest (unit, end-to-end vs ONNX Runtime/llama2.c references,
#      tokenizer differential vs Hugging Face tokenizers, make-model vs ONNX Runtime 1.30,
#      builder exports vs ONNX Runtime 1.32)
#      then the Python package (pip install ./python, pytest python/tests)
#   2. ASan+UBSan build + ctest
#   3. libFuzzer targets, bounded (NBITS_FUZZ_SECONDS, default 60 s each), one per core at a time
#   4. riscv64 leg under QEMU (tools/riscv/test.sh; NBITS_SKIP_RISCV=1 skips it outside CI)
#   5. arm64 leg under QEMU (tools/arm64/test.sh; NBITS_SKIP_ARM64=1 skips it outside CI)
# Test data comes from ../shared (NBITS_SHARED overrides).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
shared=${NBITS_SHARED:-$root/../shared}
t0=$(date +%s)
# ccache keys on paths relative to the folder that holds this checkout and ../shared, so a fresh
# clone anywhere (CI's, or a local clean-clone run) reuses the objects another clone compiled.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(dirname "$root")}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
stamp() { echo "== [$(( $(date +%s) - t0 ))s] $*"; }

bash tools/setup.sh

stamp "clang-format check"
bash tools/format_check.sh

stamp "npm reference oracles (HF tokenizers, ONNX Runtime 1.30) and the OpenAI Node client"
(cd tests/tokenizer/node && npm ci --no-audit --no-fund --loglevel=error)
(cd tests/serve/node && npm ci --no-audit --no-fund --loglevel=error)  # the official OpenAI client
mkdir -p bench/peers/.deps
if [ ! -f bench/peers/.deps/node_modules/onnxruntime-node/package.json ]; then
  (cd bench/peers/.deps && { [ -f package.json ] || echo '{"name":"nbits-peers","private":true}' > package.json; } &&
   ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund --ignore-scripts --loglevel=error onnxruntime-node@1.30.0)
fi

# llguidance (cargo) compiles once for every build folder and the Python package.
export NBITS_CARGO_TARGET_DIR=${NBITS_CARGO_TARGET_DIR:-${NBITS_CACHE:-$HOME/.cache/nbits}/cargo}
export NBITS_BUILDER_MODELS=${NBITS_BUILDER_MODELS:-${NBITS_CACHE:-$HOME/.cache/nbits}/builder-models}
export NBITS_SMOLLM2_GGUF=${NBITS_SMOLLM2_GGUF:-${NBITS_CACHE:-$HOME/.cache/nbits}/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf}

# ggml's IQ lattices are written when a build is configured, from gguf-py (cmake/room_gguf.cmake):
# a small venv of their own, made first, since the test venv that also has gguf-py is made while
# the release build compiles (a build configured without it refuses the IQ types, and their tests fail).
gguf_py=${NBITS_CACHE:-$HOME/.cache/nbits}/gguf-py
if ! "$gguf_py/bin/python" -c "import gguf" 2>/dev/null; then
  rm -rf "$gguf_py"
  python3 -m venv "$gguf_py"
  "$gguf_py/bin/pip" install -q --disable-pip-version-check gguf==0.19.0
fi
export NBITS_GGUF_PYTHON=$gguf_py/bin/python

# The cached test models (tools/setup_models.sh) are made while the release build compiles: on a
# fresh machine they are mostly one Python process and downloads (about half an hour), the build
# keeps both cores busy, and nothing of one needs the other. Seconds when the cache is there.
stamp "release build, and beside it the builder exports + references (cached in \${NBITS_CACHE:-~/.cache/nbits})"
setup_log=$(mktemp)
setsid bash tools/setup_models.sh > "$setup_log" 2>&1 &  # its own process group: stopped with it
setup_pid=$!
trap 'kill -- -"$setup_pid" 2>/dev/null || true' EXIT
build_rc=0
bash tools/build.sh release || build_rc=$?
[ "$build_rc" = 0 ] || { echo "the release build failed (exit $build_rc)" >&2; exit "$build_rc"; }
stamp "release build done; waiting for tools/setup_models.sh"
# On a fresh machine the models take longer than the build, and mostly on one core: the ASan+UBSan
# build (leg 2) uses the other meanwhile, and finishes before the release tests start (they run on
# a quiet machine, as everywhere). With the models cached this never happens.
asan_pid=""
if kill -0 "$setup_pid" 2>/dev/null; then
  stamp "the test models are still being made: the ASan+UBSan build starts beside them"
  asan_log=$(mktemp)
  setsid bash tools/build.sh asan > "$asan_log" 2>&1 &
  asan_pid=$!
  trap 'kill -- -"$setup_pid" 2>/dev/null || true; kill -- -"$asan_pid" 2>/dev/null || true' EXIT
fi
setup_rc=0
wait "$setup_pid" || setup_rc=$?
sed 's/^/[setup_models] /' "$setup_log"
rm -f "$setup_log"
[ "$setup_rc" = 0 ] || { echo "tools/setup_models.sh failed (exit $setup_rc)" >&2; exit "$setup_rc"; }
if [ -n "$asan_pid" ]; then
  stamp "test models done; waiting for the ASan+UBSan build begun beside them"
  asan_rc=0
  wait "$asan_pid" || asan_rc=$?
  tail -n 20 "$asan_log"
  rm -f "$asan_log"
  [ "$asan_rc" = 0 ] || { echo "the ASan+UBSan build failed (exit $asan_rc)" >&2; exit "$asan_rc"; }
fi
trap - EXIT

stamp "release tests"
(cd build && ctest --output-on-failure -j 2 --timeout 900)

stamp "embedding check: install, find_package(nbits) from examples/embed, run"
bash tools/embed_check.sh

stamp "Python package: pip install ./python + pytest"
py_t0=$(date +%s)
py_venv=${NBITS_CACHE:-$HOME/.cache/nbits}/venv
"$py_venv/bin/python" -c "import scikit_build_core, nanobind, pytest, jsonschema, rfc3339_validator" 2>/dev/null ||
  "$py_venv/bin/pip" install --quiet "scikit-build-core>=0.10" "nanobind>=2.0" pytest "jsonschema>=4" rfc3339-validator
# No build isolation (the venv has the build tools); -Werror and the release flags, so ccache
# serves the library objects the release build just compiled. python/build/ keeps the rest.
CMAKE_BUILD_PARALLEL_LEVEL=${NBITS_JOBS:-$(nproc)} "$py_venv/bin/pip" install --quiet --no-build-isolation \
  --config-settings=cmake.define.NBITS_WERROR=ON ./python
NBITS_CLI="$root/build/nbits" "$py_venv/bin/pytest" -q python/tests
echo "python package: $(( $(date +%s) - py_t0 ))s"

stamp "ASan+UBSan build (done already when it ran beside the test models) + tests"
bash tools/build.sh asan
# Comparisons with the peers on real weights (perplexity, logits against llama.cpp and ONNX Runtime
# on SmolLM2 / Qwen2.5-Coder, the browser test, the prefill-stall timing) check numerics and
# timing, not memory: they run in the release leg only (together ~7.5 min of ASan time); the same
# code paths run under ASan on stories260K, the tiny GGUFs of every architecture and the small
# random exports (CliPerplexity.*, GgufExact.TinyModels*, Cases/*Export* of the other families).
asan_release_only='GenaiPerplexity|LlamaCppPerplexity|Qwen25Coder|QwenCoder|ServeChatPage|ServePrefill.LongPrompt'
asan_release_only+='|Export.MatchesOnnxRuntime/smollm2|RealSmolLM2|SmolLM2Q4_1|AgreeWithLlamaCpp'
# The same seeded replies from a fresh and a cached session (SmolLM2, 18 requests): numerics; the
# serve path itself runs under ASan in every other Serve test.
asan_release_only+='|ServeDeterminism'
echo "ASan leg: tests matching '$asan_release_only' run in the release leg only"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
   ctest --output-on-failure -j 2 --timeout 1800 -E "$asan_release_only")

stamp "fuzzers (bounded)"
bash tools/build.sh fuzz
fuzz_jobs=${NBITS_JOBS:-$(nproc)}
fuzz_logs=build-fuzz/logs
rm -rf "$fuzz_logs" && mkdir -p "$fuzz_logs"
for f in build-fuzz/fuzz/fuzz_*; do
  [ -x "$f" ] || continue
  name=$(basename "$f")
  corpus=build-fuzz/corpus/$name
  mkdir -p "$corpus"
  extra=""
  case "$name" in
    fuzz_onnx_reader) for m in "$shared"/models/stories260K/*/model.onnx; do
                        cp -f "$m" "$corpus/seed_$(basename "$(dirname "$m")").onnx"; done 2>/dev/null || true
                      extra="-max_len=400000" ;;
    fuzz_gguf_reader) "${NBITS_CACHE:-$HOME/.cache/nbits}/venv/bin/python" tools/gguf/make_seed.py "$corpus/seed_small.gguf"
                      "${NBITS_CACHE:-$HOME/.cache/nbits}/venv/bin/python" tools/gguf/make_seed.py "$corpus/seed_small_moe.gguf" moe
                      [ -f "${NBITS_SMOLLM2_GGUF:-}" ] && head -c 65536 "$NBITS_SMOLLM2_GGUF" > "$corpus/seed_smollm2_head.gguf"
                      # every quant type nbits maps: the tensor infos of the tiny model of the new types
                      tq=${NBITS_CACHE:-$HOME/.cache/nbits}/gguf/tiny/tiny_quants.gguf
                      [ -f "$tq" ] && head -c 65536 "$tq" > "$corpus/seed_tiny_quants_head.gguf"
                      [ -f "${tq%quants.gguf}iquants.gguf" ] && head -c 65536 "${tq%quants.gguf}iquants.gguf" > "$corpus/seed_tiny_iquants_head.gguf"
                      extra="-max_len=70000" ;;
    fuzz_tokenizer)   for c in "$shared"/tokenizers/cases/*.json; do head -c 4096 "$c" > "$corpus/$(basename "$c")"; done 2>/dev/null || true ;;
    # byte 0: the type (0 json_schema, 1 json_object, 2 regex, 3 lark), byte 1: which tokens to walk
    fuzz_guidance_spec) printf '\000\003{"type":"object","properties":{"a":{"type":"integer","maximum":9},"b":{"enum":["x","y"]}},"required":["a"]}' > "$corpus/seed_schema"
                      printf '\000\011{"$defs":{"n":{"anyOf":[{"type":"null"},{"$ref":"#/$defs/n"}]}},"$ref":"#/$defs/n"}' > "$corpus/seed_ref"
                      printf '\002\005[a-z]{1,5}@[0-9]+(\\.[a-z]{2,3})?' > "$corpus/seed_regex"
                      printf '\003\001start: ans " " num\nans: "yes" | "no"\nnum: /[0-9]{1,3}/' > "$corpus/seed_lark" ;;
  esac
  # Each fuzzer is one process: they run side by side, one per core, each for its own time.
  while [ "$(jobs -rp | wc -l)" -ge "$fuzz_jobs" ]; do wait -n || true; done
  ( set +e
    "$f" -max_total_time="${NBITS_FUZZ_SECONDS:-60}" -rss_limit_mb=2048 $extra "$corpus" > "$fuzz_logs/$name.log" 2>&1
    echo $? > "$fuzz_logs/$name.rc" ) &
done
wait
fuzz_failed=0
for rc in "$fuzz_logs"/*.rc; do
  name=$(basename "$rc" .rc)
  echo "-- $name (exit $(cat "$rc"))"
  tail -n 12 "$fuzz_logs/$name.log"
  [ "$(cat "$rc")" = 0 ] || fuzz_failed=1
done
[ "$fuzz_failed" = 0 ] || { echo "a fuzzer found a failure (logs above; its crash input is in the working folder)" >&2; exit 1; }

if [ "${NBITS_SKIP_RISCV:-0}" != 1 ]; then
  stamp "riscv64 leg (QEMU)"
  NBITS_RV_E2E=${NBITS_RV_E2E:-1} bash tools/riscv/test.sh
fi

if [ "${NBITS_SKIP_ARM64:-0}" != 1 ] || [ "${CI:-}" = true ]; then
  stamp "arm64 leg (QEMU)"
  NBITS_ARM64_E2E=${NBITS_ARM64_E2E:-1} bash tools/arm64/test.sh
fi

stamp "all suites passed"
