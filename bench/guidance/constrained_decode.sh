#!/usr/bin/env bash
# Constrained against free decoding, nbits and llama.cpp side by side on one GGUF: the same chat
# question, greedy, free and with a JSON schema (nbits --json-schema; llama.cpp's JSON-schema
# grammar through node-llama-cpp), R alternating rounds per thread count; prints each run's
# decode ms/token (prefill excluded) and the medians.
#   bash bench/guidance/constrained_decode.sh MODEL.gguf [SCHEMA.json] [THREADS="1 2"] [ROUNDS=3]
set -euo pipefail
cd "$(dirname "$0")/../.."
model=${1:?usage: constrained_decode.sh MODEL.gguf [SCHEMA.json] [THREADS] [ROUNDS]}
schema=${2:-bench/guidance/project.schema.json}
threads=${3:-"1 2"}
rounds=${4:-3}
q="Describe a popular open source project as JSON with name, language, stars, tags and a long description."
nbits=${NBITS:-./build/nbits}
have_llama=1
[ -f bench/peers/.deps/node_modules/node-llama-cpp/package.json ] || have_llama=0
out=$(mktemp)
for t in $threads; do
  for r in $(seq "$rounds"); do
    for mode in free schema; do
      extra=(); [ "$mode" = schema ] && extra=(--json-schema "$schema")
      "$nbits" run -m "$model" --chat -p "$q" -n 128 -t "$t" --temp 0 --format json "${extra[@]}" 2>/dev/null |
        python3 -c "import json,sys; j=json.load(sys.stdin); print('nbits $mode $t', j['decode_ms_per_token'], len(j['ids']))" >> "$out"
      if [ "$have_llama" = 1 ]; then
        lextra=(); [ "$mode" = free ] && lextra=(--free)
        node bench/guidance/llama_json.mjs "$model" "$schema" "$q" --threads "$t" --max 128 "${lextra[@]}" |
          python3 -c "import json,sys; j=json.loads(sys.stdin.read().strip().splitlines()[-1]); print('llama.cpp $mode $t', j['decode_ms_per_token'], j['tokens'])" >> "$out"
      fi
    done
  done
done
cat "$out"
python3 - "$out" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    rt, mode, t, ms, n = line.split()
    runs[(rt, t, mode)].append(float(ms))
print("runtime    threads  free ms/token  schema ms/token  ratio")
for (rt, t) in sorted({(k[0], k[1]) for k in runs}):
    f, s = statistics.median(runs[(rt, t, "free")]), statistics.median(runs[(rt, t, "schema")])
    print(f"{rt:<10} {t:>7}  {f:13.2f}  {s:15.2f}  {s / f:5.3f}")
PY
rm -f "$out"
