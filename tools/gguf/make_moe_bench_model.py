"""A mixture-of-experts GGUF of a real model's shapes with random weights, for benchmarks (not
tests), written once into the cache; SmolLM2's vocabulary (49152 tokens) in both.
--arch olmoe (default): OLMoE-1B-7B (16 layers, hidden 2048, 16 heads of 128 (MHA), 64 experts of FFN
1024, top-8, llama.cpp's olmoe graph) in a Q4_K_M-like recipe: attention and expert gate/up Q4_K,
expert down Q6_K, embedding Q4_K, output Q6_K, F32 routers (OLMoE's vocabulary is 50304). About 4.2 GB.
--arch gpt-oss: gpt-oss-20b (24 layers, hidden 2880, 64 query / 8 KV heads of 64, 32 experts of FFN
2880, top-4, every other layer a 128-token window, YaRN 32 over 4096, attention sinks, biases) with
MXFP4 experts as the released file has them and Q8_0 elsewhere (its vocabulary is 201088, so its
embedding and output are 4x these). About 11 GB.
--arch qwen3moe: Qwen3-30B-A3B (48 layers, hidden 2048, 32 query / 4 KV heads of 128 with per-head
q/k norms, 128 experts of FFN 768, top-8, rope base 1e6) in the olmoe recipe (its vocabulary is
151936, so its embedding and output are 3x these). About 19.5 GB; --layers 24 writes its first half
(9.8 GB).
--arch granitemoe: Granite-3.1-3B-A800M (32 layers, hidden 1536, 24 query / 8 KV heads of 64, 40
experts of FFN 512, top-8, Granite's embedding / residual / attention / logit multipliers, tied
output) in the olmoe recipe. About 2 GB.
Router weights of std 0.02 (trained routers spread tokens over the experts; these are random, so
each token's top-k is a fresh draw).
Usage: python make_moe_bench_model.py SMOLLM2.gguf OUT.gguf [--arch olmoe|gpt-oss|qwen3moe|granitemoe]
       [--layers N]"""
import argparse
import os

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf.constants import GGML_QUANT_SIZES

ap = argparse.ArgumentParser()
ap.add_argument("smollm2")
ap.add_argument("out")
ap.add_argument("--arch", choices=("olmoe", "gpt-oss", "qwen3moe", "granitemoe"), default="olmoe")
ap.add_argument("--layers", type=int, default=0)
args = ap.parse_args()
oss = args.arch == "gpt-oss"
qwen3, granite = args.arch == "qwen3moe", args.arch == "granitemoe"
if oss:
    E, NH, NKV, HD, NEXP, USED, FFE, L = 2880, 64, 8, 64, 32, 4, 2880, args.layers or 24
elif qwen3:
    E, NH, NKV, HD, NEXP, USED, FFE, L = 2048, 32, 4, 128, 128, 8, 768, args.layers or 48
elif granite:
    E, NH, NKV, HD, NEXP, USED, FFE, L = 1536, 24, 8, 64, 40, 8, 512, args.layers or 32
else:
    E, NH, NKV, HD, NEXP, USED, FFE, L = 2048, 16, 16, 128, 64, 8, 1024, args.layers or 16
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
    elif t == T.Q8_0:
        b[:, 0:2] = half(np.full(n, 1.5e-4))
    elif t == T.MXFP4:  # e8m0 2^(e - 128) times the doubled e2m1 levels (up to 12)
        b[:, 0] = 120
    else:  # Q6_K: d at the end
        b[:, 208:210] = half(np.full(n, 5e-6))
    return b.reshape(rows, -1)


w = gguf.GGUFWriter(args.out + ".tmp", args.arch)
w.add_block_count(L)
w.add_context_length(131072 if oss else 4096)
w.add_embedding_length(E)
w.add_feed_forward_length(FFE)
w.add_head_count(NH)
w.add_head_count_kv(NKV)
w.add_key_length(HD)
w.add_value_length(HD)
w.add_layer_norm_rms_eps(1e-5)
w.add_rope_freq_base(150000.0 if oss else 1e6 if qwen3 else 10000.0)
w.add_expert_count(NEXP)
w.add_expert_used_count(USED)
if oss or qwen3:
    w.add_expert_feed_forward_length(FFE)
if granite:  # Granite-3.1-3B-A800M's config.json multipliers
    w.add_float32("granitemoe.embedding_scale", 12.0)
    w.add_float32("granitemoe.residual_scale", 0.22)
    w.add_float32("granitemoe.attention.scale", 0.015625)
    w.add_float32("granitemoe.logit_scale", 6.0)
if oss:
    w.add_sliding_window(128)
    w.add_string("gpt-oss.rope.scaling.type", "yarn")
    w.add_float32("gpt-oss.rope.scaling.factor", 32.0)
    w.add_uint32("gpt-oss.rope.scaling.original_context_length", 4096)
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
small = lambda *shape: (0.02 * rng.standard_normal(shape)).astype(np.float32)
dense, emb_t, out_t = (T.Q8_0, T.Q8_0, T.Q8_0) if oss else (T.Q4_K, T.Q4_K, T.Q6_K)
w.add_tensor("token_embd.weight", blocks(V, E, emb_t), raw_dtype=emb_t)
w.add_tensor("output_norm.weight", ones(E))
if not granite:  # Granite ties the output to the embedding
    w.add_tensor("output.weight", blocks(V, E, out_t), raw_dtype=out_t)
for l in range(L):
    p = "blk.%d." % l
    for n in ("attn_norm", "post_attention_norm" if oss else "ffn_norm"):
        w.add_tensor(p + n + ".weight", ones(E))
    if qwen3:  # per head
        for n in ("attn_q_norm", "attn_k_norm"):
            w.add_tensor(p + n + ".weight", ones(HD))
    elif not oss and not granite:  # OLMoE: over all heads
        for n, width in (("attn_q_norm", NH * HD), ("attn_k_norm", NKV * HD)):
            w.add_tensor(p + n + ".weight", ones(width))
    for n, rows, cols in (("attn_q", NH * HD, E), ("attn_k", NKV * HD, E), ("attn_v", NKV * HD, E),
                          ("attn_output", E, NH * HD)):
        w.add_tensor(p + n + ".weight", blocks(rows, cols, dense), raw_dtype=dense)
        if oss:
            w.add_tensor(p + n + ".bias", small(rows))
    w.add_tensor(p + "ffn_gate_inp.weight", small(NEXP, E))
    if oss:
        w.add_tensor(p + "attn_sinks.weight", small(NH))
        w.add_tensor(p + "ffn_gate_inp.bias", small(NEXP))
        for n, rows, cols in (("ffn_gate_exps", FFE, E), ("ffn_up_exps", FFE, E), ("ffn_down_exps", E, FFE)):
            w.add_tensor(p + n + ".weight", blocks(NEXP * rows, cols, T.MXFP4).reshape(NEXP, rows, -1),
                         raw_dtype=T.MXFP4)
            w.add_tensor(p + n + ".bias", small(NEXP, rows))
        continue
    for n in ("ffn_gate_exps", "ffn_up_exps"):
        w.add_tensor(p + n + ".weight", blocks(NEXP * FFE, E, T.Q4_K).reshape(NEXP, FFE, -1), raw_dtype=T.Q4_K)
    w.add_tensor(p + "ffn_down_exps.weight", blocks(NEXP * E, FFE, T.Q6_K).reshape(NEXP, E, -1), raw_dtype=T.Q6_K)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
os.replace(args.out + ".tmp", args.out)
