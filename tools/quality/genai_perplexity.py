"""Perplexity of a genai model folder (onnxruntime-genai's own og.Generator) on a text, by the rule of
`nbits perplexity` (src/cli/perplexity.cc), so the two numbers compare:
  - the text is tokenized without special tokens (Hugging Face tokenizers on the folder's
    tokenizer.json, the ids nbits' tokenizer gives: tests/tokenizer);
  - windows of --ctx tokens start every --ctx tokens while a whole window fits (at most --chunks),
    each run from an empty cache, its first token replaced by BOS when the tokenizer adds one;
  - a window scores its positions p >= ctx/2: NLL = -log_softmax(logits at p-1)[token at p];
  - PPL = exp(mean NLL), error PPL * s / sqrt(n).
Writes one JSON object {"runtime", "ppl", "ppl_err", "tokens", "tokens_scored", "windows", "ctx", "bos"}.
Usage: python genai_perplexity.py MODEL_DIR TEXT OUT.json [--ctx 512] [--chunks N]"""
import argparse
import json
import math

import numpy as np
import onnxruntime_genai as og
from tokenizers import Tokenizer


def windows_rule(ids, ctx, chunks):
    n = (len(ids) - ctx) // ctx + 1
    return min(n, chunks) if chunks else n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("text")
    ap.add_argument("out")
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--chunks", type=int, default=0)
    a = ap.parse_args()
    tok = Tokenizer.from_file(a.model + "/tokenizer.json")
    text = open(a.text, encoding="utf-8").read()
    ids = tok.encode(text, add_special_tokens=False).ids
    cfg = json.load(open(a.model + "/genai_config.json"))["model"]
    bos_id = cfg.get("bos_token_id", -1)
    probe = tok.encode("a", add_special_tokens=True).ids
    bos = bos_id if bos_id >= 0 and probe and probe[0] == bos_id else -1
    ctx, half = a.ctx, a.ctx // 2
    nw = windows_rule(ids, ctx, a.chunks)
    model = og.Model(a.model)
    nll = []
    for w in range(nw):
        window = list(ids[w * ctx:(w + 1) * ctx])
        if bos >= 0:
            window[0] = bos
        params = og.GeneratorParams(model)
        params.set_search_options(max_length=ctx + 1, do_sample=False)
        gen = og.Generator(model, params)
        gen.append_tokens(np.array(window, dtype=np.int32))
        logits = np.asarray(gen.get_output("logits"), dtype=np.float64).reshape(ctx, -1)
        for p in range(half, ctx):
            row = logits[p - 1]
            m = row.max()
            nll.append(m + math.log(np.exp(row - m).sum()) - row[window[p]])
        del gen
    n = len(nll)
    mean = sum(nll) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in nll) / (n - 1)) if n > 1 else 0.0
    ppl = math.exp(mean)
    json.dump({"runtime": "onnxruntime-genai " + og.__version__, "ppl": ppl, "ppl_err": ppl * sd / math.sqrt(n),
               "tokens": len(ids), "tokens_scored": n, "windows": nw, "ctx": ctx, "bos": bos >= 0}, open(a.out, "w"))


main()
