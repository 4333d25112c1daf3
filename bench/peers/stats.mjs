// Median / percentiles (linear interpolation, like nbits bench) and the common JSON summary.
export function percentile(values, p) {
  if (!values.length) return 0;
  const v = [...values].sort((a, b) => a - b);
  const x = p * (v.length - 1), i = Math.floor(x);
  return i + 1 >= v.length ? v[v.length - 1] : v[i] + (x - i) * (v[i + 1] - v[i]);
}

export function summary(extra, prompt, prefillMs, decodeMs) {
  const pre = percentile(prefillMs, 0.5), dec = percentile(decodeMs, 0.5);
  return { ...extra, prompt_tokens: prompt, decode_tokens_per_rep: decodeMs.length / Math.max(prefillMs.length, 1),
    prefill_ms_median: pre, prefill_tok_s: pre > 0 ? prompt * 1e3 / pre : 0,
    decode_ms_median: dec, decode_ms_p10: percentile(decodeMs, 0.1), decode_ms_p90: percentile(decodeMs, 0.9),
    decode_tok_s: dec > 0 ? 1e3 / dec : 0, prefill_ms_all: prefillMs, decode_ms_all: decodeMs };
}

export function promptIds(n, vocab) {
  return Array.from({ length: n }, (_, i) => (1 + i * 7919) % vocab);  // same ids as nbits bench
}
