#!/usr/bin/env bash
# GroupQueryAttention before/after in one binary, alternating per prompt length. NBITS_ATTENTION
# (src/ops/group_query_attention.cc): "group" = the per-position attend_group path every position
# took before the tile kernel; "tile" = the tile kernel for prefill, attend_group for one-position
# decode (before the keys kernel); "keys" (the default; any other value) = the tile kernel for
# prefill, kernels::attend_decode (the keys across the lanes) for one-position decode.
#   bench/attention_ab.sh BUILD_DIR MODEL_DIR [prompts...]   (default prompts: 128 1024 2048)
# Env: VARIANTS (default "tile keys"), T (thread list, default 1,2), N (decode tokens, default 16),
# REPS (default 2).
set -euo pipefail
build=${1:?build dir}
model=${2:?model dir}
shift 2
prompts=("$@")
[ ${#prompts[@]} -gt 0 ] || prompts=(128 1024 2048)
for p in "${prompts[@]}"; do
  for v in ${VARIANTS:-tile keys}; do
    echo "=== NBITS_ATTENTION=$v -p $p ($(date +%T), load $(cut -d' ' -f1 /proc/loadavg))"
    NBITS_ATTENTION=$v "$build/nbits" bench -m "$model" -t "${T:-1,2}" -p "$p" -n "${N:-16}" --reps "${REPS:-2}" 2>&1 |
      grep -E "^threads|floor"
  done
done
