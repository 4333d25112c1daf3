#!/usr/bin/env python3
"""A llama2.c checkpoint (stories260K.bin) as a Hugging Face LlamaForCausalLM folder, for the Optimum
exporter path (make.py's stories260k case).

llama2.c's format (export.py legacy_export / run.c read_checkpoint): seven int32 (dim, hidden_dim,
n_layers, n_heads, n_kv_heads, vocab_size: negative for an unshared classifier, seq_len), then fp32
token_embedding [V, dim], rms_att [L, dim], wq [L, dim, dim], wk [L, kv_dim, dim], wv [L, kv_dim, dim],
wo [L, dim, dim], rms_ffn [L, dim], w1 [L, hidden, dim], w2 [L, dim, hidden], w3 [L, hidden, dim],
rms_final [dim], freq_cis_real / freq_cis_imag [seq_len, head_size/2] (unused: recomputed from theta
10000), wcls [V, dim] when unshared. Every matrix is [out, in], as torch's Linear weights.

llama2.c rotates interleaved pairs (2i, 2i+1) of each head; HF Llama rotates halves (i, i+hs/2)
(rotate_half). So each head's q and k output rows are permuted, new row i + half*hs/2 = old row
2i + half: the inverse of what HF's convert_llama_weights_to_hf.py undoes for Meta checkpoints
(the same permutation: q.k is unchanged, the function computed is llama2.c's). v, o, the MLP
(w1 = gate_proj, w3 = up_proj, w2 = down_proj) and the norms map one to one.

Writes config.json (rms_norm_eps 1e-5, rope_theta 10000, max_position_embeddings = seq_len, the
transformers 4.57 layout make.py's exporter reads), generation_config.json, model.safetensors, and
the tokenizer.json / tokenizer_config.json of the genai stories260K folders (tok512 as a Llama
SentencePiece-style tokenizer) when found beside the checkpoint.
usage: llama2c_to_hf.py CKPT OUT_DIR   (needs numpy and safetensors: the set-up venv)
"""
import json
import os
import shutil
import struct
import sys

import numpy as np
from safetensors.numpy import save_file


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    ckpt, out = sys.argv[1], sys.argv[2]
    raw = open(ckpt, "rb").read()
    dim, hidden, L, H, KVH, V, S = struct.unpack_from("<7i", raw, 0)
    shared = V > 0
    V = abs(V)
    hs = dim // H
    kvd = KVH * hs
    w = np.frombuffer(raw, dtype="<f4", offset=28)
    pos = 0

    def take(*shape):
        nonlocal pos
        n = int(np.prod(shape))
        t = w[pos:pos + n].reshape(shape).copy()
        pos += n
        return t

    emb = take(V, dim)
    rms_att = take(L, dim)
    wq = take(L, dim, dim)
    wk = take(L, kvd, dim)
    wv = take(L, kvd, dim)
    wo = take(L, dim, dim)
    rms_ffn = take(L, dim)
    w1 = take(L, hidden, dim)
    w2 = take(L, dim, hidden)
    w3 = take(L, hidden, dim)
    rms_final = take(dim)
    take(S, hs // 2)  # freq_cis_real
    take(S, hs // 2)  # freq_cis_imag
    wcls = None if shared else take(V, dim)
    if pos != w.size:
        raise SystemExit(f"{ckpt}: {w.size - pos} floats left after the weights (not a llama2.c v0 checkpoint?)")

    perm = np.concatenate([np.arange(0, hs, 2), np.arange(1, hs, 2)])  # new row j <- old row perm[j]

    def rotary_rows(m, nh):  # [nh*hs, in], interleaved pairs -> halves
        return np.ascontiguousarray(m.reshape(nh, hs, -1)[:, perm, :].reshape(nh * hs, -1))

    t = {"model.embed_tokens.weight": emb, "model.norm.weight": rms_final}
    for i in range(L):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = rms_att[i]
        t[p + "post_attention_layernorm.weight"] = rms_ffn[i]
        t[p + "self_attn.q_proj.weight"] = rotary_rows(wq[i], H)
        t[p + "self_attn.k_proj.weight"] = rotary_rows(wk[i], KVH)
        t[p + "self_attn.v_proj.weight"] = wv[i]
        t[p + "self_attn.o_proj.weight"] = wo[i]
        t[p + "mlp.gate_proj.weight"] = w1[i]
        t[p + "mlp.up_proj.weight"] = w3[i]
        t[p + "mlp.down_proj.weight"] = w2[i]
    if wcls is not None:
        t["lm_head.weight"] = wcls
    os.makedirs(out, exist_ok=True)
    save_file(t, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": dim,
        "intermediate_size": hidden, "num_hidden_layers": L, "num_attention_heads": H,
        "num_key_value_heads": KVH, "head_dim": hs, "vocab_size": V, "max_position_embeddings": S,
        "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "rope_scaling": None, "hidden_act": "silu",
        "attention_bias": False, "attention_dropout": 0.0, "mlp_bias": False, "pretraining_tp": 1,
        "initializer_range": 0.02, "tie_word_embeddings": shared, "use_cache": True, "bos_token_id": 1,
        "eos_token_id": 2, "torch_dtype": "float32",
    }
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(out, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": 1, "eos_token_id": 2}, f, indent=2)
    # The tokenizer of the genai stories260K folders (../onnx_fp32 beside llama2c/).
    tok = os.path.join(os.path.dirname(os.path.abspath(ckpt)), "..", "onnx_fp32")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        if os.path.exists(os.path.join(tok, name)):
            shutil.copy(os.path.join(tok, name), os.path.join(out, name))
    print(f"wrote {out}: dim {dim}, hidden {hidden}, {L} layers, {H} heads ({KVH} kv), vocab {V}"
          f" ({'shared' if shared else 'unshared'} classifier), seq_len {S}")


if __name__ == "__main__":
    main()
