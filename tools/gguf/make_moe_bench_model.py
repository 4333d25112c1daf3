"""A mixture-of-experts GGUF of a real model's shapes with random weights, for benchmarks (not
tests): OLMoE-1B-7B (16 layers, hidden 2048, 16 heads of 128 (MHA), 64 experts of FFN 1024, top-8,
llama.cpp's olmoe graph) in a Q4_K_M-like recipe: attention and expert gate/up Q4_K, expert down
Q6_K, embedding Q4_K, output Q6_K, F32 routers; SmolLM2's vocabulary (49152 tokens; OLMoE's is
50304). Router weights of std 0.02 (trained routers spread tokens over the experts; these are
random, so each token's top-8 is a fresh draw). About 4.2 GB, written once into the cache.
Usage: python make_moe_bench_model.py SMOLLM2.gguf OUT.gguf [--layers N]"""
import argparse
import os

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf.constants import GGML_QUANT_SIZES

ap = argparse.ArgumentParser()
ap.add_argument("smollm2")
ap.add_argument("out")
ap.add_argument("--layers", type=int, default=16)
args = ap.parse_args()
E, NH, HD, NEXP, USED, FFE, L = 2048, 16, 128, 64, 8, 1024, args.layers
rng = np.random.default_rng(77)
r = gguf.GGUFReader(args.smollm2)
V = len(r.fields["tokenizer.ggml.tokens"].data)


def blocks(rows, cols, t):
    """Random blocks of a K-quant type, scales set so values are about N(0, 0.02)."""
    block, size = GGML_QUANT_SIZES[t]
    b = rng.integers(0, 256, size=(rows * cols // block, size), dtype=np.uint8)
    n = b.shape[0]
    half = lambda x: np.asarray(x, dtype=np.float16).view(np.uint8).reshape(-1, 2)
    if t == T.Q4_K:
        b[:, 0:2] = half(np.full(n, 8e-5))
        b[:, 2:4] = half(np.full(n, 8e-5))
    else:  # Q6_K: d at the end
        b[:, 208:210] = half(np.full(n, 5e-6))
    return b.reshape(rows, -1)


w = gguf.GGUFWriter(args.out + ".tmp", "olmoe")
w.add_block_count(L)
w.add_context_length(4096)
w.add_embedding_length(E)
w.add_feed_forward_length(FFE)
w.add_head_count(NH)
w.add_head_count_kv(NH)
w.add_layer_norm_rms_eps(1e-5)
w.add_rope_freq_base(10000.0)
w.add_expert_count(NEXP)
w.add_expert_used_count(USED)
w.add_vocab_size(V)
for f in r.fields.values():
    if not f.name.startswith("tokenizer."):
        continue
    vt = f.types[0]
    if vt == gguf.GGUFValueType.ARRAY:
        et = f.types[-1]
        vals = [bytes(f.parts[i]).decode("utf-8", "surrogateescape") if et == gguf.GGUFValueType.STRING
                else f.parts[i].item() for i in f.data]
        w.add_key_value(f.name, vals, vt, sub_type=et)
    else:
        v = f.parts[f.data[0]]
        w.add_key_value(f.name, bytes(v).decode() if vt == gguf.GGUFValueType.STRING else v.item(), vt)
ones = lambda n: (1 + 0.05 * rng.standard_normal(n)).astype(np.float32)
w.add_tensor("token_embd.weight", blocks(V, E, T.Q4_K), raw_dtype=T.Q4_K)
w.add_tensor("output_norm.weight", ones(E))
w.add_tensor("output.weight", blocks(V, E, T.Q6_K), raw_dtype=T.Q6_K)
for l in range(L):
    p = "blk.%d." % l
    for n in ("attn_norm", "ffn_norm"):
        w.add_tensor(p + n + ".weight", ones(E))
    for n in ("attn_q_norm", "attn_k_norm"):
        w.add_tensor(p + n + ".weight", ones(E))
    for n in ("attn_q", "attn_k", "attn_v", "attn_output"):
        w.add_tensor(p + n + ".weight", blocks(E, E, T.Q4_K), raw_dtype=T.Q4_K)
    w.add_tensor(p + "ffn_gate_inp.weight", (0.02 * rng.standard_normal((NEXP, E))).astype(np.float32))
    for n in ("ffn_gate_exps", "ffn_up_exps"):
        w.add_tensor(p + n + ".weight", blocks(NEXP * FFE, E, T.Q4_K).reshape(NEXP, FFE, -1), raw_dtype=T.Q4_K)
    w.add_tensor(p + "ffn_down_exps.weight", blocks(NEXP * E, FFE, T.Q6_K).reshape(NEXP, E, -1), raw_dtype=T.Q6_K)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
os.replace(args.out + ".tmp", args.out)
