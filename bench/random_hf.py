#!/usr/bin/env python3
"""Saves a random-initialised Hugging Face causal LM (weights ~ N(0, 0.02), seed 0) for benchmarks.

Usage: random_hf.py OUT_DIR CONFIG_CLASS key=value ...   (values are Python literals), e.g.
  random_hf.py out Qwen2Config hidden_size=896 num_hidden_layers=24 tie_word_embeddings=True
"""
import ast
import sys

import torch
import transformers
from transformers import AutoModelForCausalLM


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    out, cls = sys.argv[1], sys.argv[2]
    kwargs = {k: ast.literal_eval(v) for k, v in (a.split("=", 1) for a in sys.argv[3:])}
    cfg = getattr(transformers, cls)(**kwargs)
    torch.manual_seed(0)
    m = AutoModelForCausalLM.from_config(cfg)
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0, 0.02)
    m.save_pretrained(out)


if __name__ == "__main__":
    main()
