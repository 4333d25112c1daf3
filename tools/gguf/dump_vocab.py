#!/usr/bin/env python3
"""Writes the tokenizer.* metadata of a GGUF file as JSON (the fields of nbits::GgufVocab).

  python tools/gguf/dump_vocab.py MODEL.gguf OUT.json

Needs the `gguf` package (0.19, installed into the cached venv by tools/setup_models.sh). Used by
the tokenizer tests until nbits reads GGUF itself.
"""
import json
import os
import sys

from gguf import GGUFReader

KEYS = {
    "tokenizer.ggml.model": "model",
    "tokenizer.ggml.pre": "pre",
    "tokenizer.ggml.tokens": "tokens",
    "tokenizer.ggml.scores": "scores",
    "tokenizer.ggml.token_type": "token_types",
    "tokenizer.ggml.merges": "merges",
    "tokenizer.ggml.bos_token_id": "bos",
    "tokenizer.ggml.eos_token_id": "eos",
    "tokenizer.ggml.unknown_token_id": "unk",
    "tokenizer.ggml.padding_token_id": "pad",
    "tokenizer.ggml.add_bos_token": "add_bos",
    "tokenizer.ggml.add_eos_token": "add_eos",
    "tokenizer.ggml.add_space_prefix": "add_space_prefix",
    "tokenizer.chat_template": "chat_template",
}


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: dump_vocab.py MODEL.gguf OUT.json")
    reader = GGUFReader(sys.argv[1])
    out = {"source": sys.argv[1]}
    for key, name in KEYS.items():
        field = reader.fields.get(key)
        if field is not None:
            out[name] = field.contents()
    if "tokens" not in out:
        sys.exit(f"{sys.argv[1]}: no tokenizer.ggml.tokens")
    tmp = sys.argv[2] + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False)
    os.replace(tmp, sys.argv[2])


if __name__ == "__main__":
    main()
