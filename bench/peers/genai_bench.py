"""onnxruntime-genai (PyPI onnxruntime-genai, its own og.Generator loop, greedy) on a genai model folder:
prefill P ids (the same ids as nbits bench and the other peers) then decode N tokens, T threads
(session_options intra_op_num_threads through og.Config.overlay). Prints the common JSON summary of
bench/peers/stats.mjs (prefill_tok_s, decode_ms_median, decode_ms_all, ...).
  python bench/peers/genai_bench.py MODEL_DIR [--threads 1] [--prompt 128] [--decode 64] [--reps 3]
Timings are around append_tokens (prefill, which computes the first token's logits) and each
generate_next_token + get_next_tokens (one decode step, greedy search inside genai)."""
import argparse
import json
import time

import numpy as np
import onnxruntime_genai as og


def percentile(values, p):  # linear interpolation, like stats.mjs
    if not values:
        return 0.0
    v = sorted(values)
    x = p * (len(v) - 1)
    i = int(x)
    return v[-1] if i + 1 >= len(v) else v[i] + (x - i) * (v[i + 1] - v[i])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--decode", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    t0 = time.perf_counter()
    cfg = og.Config(a.model)
    cfg.overlay(json.dumps({"model": {"decoder": {"session_options": {
        "intra_op_num_threads": a.threads, "inter_op_num_threads": 1}}}}))
    model = og.Model(cfg)
    load_ms = (time.perf_counter() - t0) * 1e3
    vocab = json.load(open(a.model + "/genai_config.json"))["model"]["vocab_size"]

    def rep(p, n, pre, dec):
        params = og.GeneratorParams(model)
        params.set_search_options(max_length=p + n + 1, do_sample=False)
        gen = og.Generator(model, params)
        ids = np.array([(1 + i * 7919) % vocab for i in range(p)], dtype=np.int32)
        t = time.perf_counter()
        gen.append_tokens(ids)
        if pre is not None:
            pre.append((time.perf_counter() - t) * 1e3)
        for _ in range(n):
            t = time.perf_counter()
            gen.generate_next_token()
            gen.get_next_tokens()
            if dec is not None:
                dec.append((time.perf_counter() - t) * 1e3)

    rep(min(a.prompt, 8), 4, None, None)  # warm-up
    pre, dec = [], []
    for _ in range(a.reps):
        rep(a.prompt, a.decode, pre, dec)
    p50, d50 = percentile(pre, 0.5), percentile(dec, 0.5)
    print(json.dumps({"runtime": "onnxruntime-genai", "version": og.__version__, "model": a.model,
                      "threads": a.threads, "load_ms": load_ms, "vocab": vocab, "prompt_tokens": a.prompt,
                      "decode_tokens_per_rep": len(dec) / max(len(pre), 1), "prefill_ms_median": p50,
                      "prefill_tok_s": a.prompt * 1e3 / p50 if p50 > 0 else 0, "decode_ms_median": d50,
                      "decode_ms_p10": percentile(dec, 0.1), "decode_ms_p90": percentile(dec, 0.9),
                      "decode_tok_s": 1e3 / d50 if d50 > 0 else 0, "prefill_ms_all": pre, "decode_ms_all": dec}))


main()
