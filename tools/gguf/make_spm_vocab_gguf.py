#!/usr/bin/env python3
"""A vocab-only GGUF (tokenizer.ggml.model "llama") from a SentencePiece tokenizer.model, as llama.cpp's
converter writes one: pieces, scores, token types, BOS/EOS/UNK, add_space_prefix. Used to make the
llama.cpp reference ids of tests/tokenizer/data (tools/gguf/llamacpp_token_ref.mjs reads it).

  python tools/gguf/make_spm_vocab_gguf.py tokenizer.model OUT.gguf

Needs the `gguf` package (the cached venv of tools/setup_models.sh). The llama hyper-parameters are
placeholders: llama.cpp loads them even with vocab_only.
"""
import struct
import sys

import gguf


def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        if not c & 0x80:
            return v, i
        shift += 7


def fields(b, i, end):
    while i < end:
        tag, i = varint(b, i)
        f, wt = tag >> 3, tag & 7
        if wt == 0:
            v, i = varint(b, i)
            yield f, wt, v
        elif wt == 2:
            n, i = varint(b, i)
            yield f, wt, (i, i + n)
            i += n
        elif wt == 5:
            yield f, wt, b[i:i + 4]
            i += 4
        elif wt == 1:
            i += 8
        else:
            raise ValueError("wire type %d" % wt)


def main():
    model, out = sys.argv[1:3]
    b = open(model, "rb").read()
    pieces, scores, types, dummy_prefix = [], [], [], True
    for f, wt, v in fields(b, 0, len(b)):
        if f == 1 and wt == 2:
            piece, score, typ = "", 0.0, 1
            for g, w, x in fields(b, *v):
                if g == 1 and w == 2:
                    piece = b[x[0]:x[1]].decode("utf-8")
                elif g == 2 and w == 5:
                    score = struct.unpack("<f", x)[0]
                elif g == 3 and w == 0:
                    typ = x
            pieces.append(piece)
            scores.append(score)
            types.append(typ)
        elif f == 3 and wt == 2:
            for g, w, x in fields(b, *v):
                if g == 3 and w == 0:
                    dummy_prefix = bool(x)
    w = gguf.GGUFWriter(out, "llama")
    w.add_context_length(2048)
    w.add_embedding_length(64)
    w.add_block_count(1)
    w.add_feed_forward_length(128)
    w.add_head_count(1)
    w.add_head_count_kv(1)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(64)
    w.add_tokenizer_model("llama")
    w.add_token_list(pieces)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_add_space_prefix(dummy_prefix)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
