"""A dense GGUF of Llama-3.2-1B's shapes (16 layers, hidden 2048, 32 heads of 64, 8 KV heads, FFN
8192) with random weights in one of ggml's low-bit types, for benchmarks (not tests): every layer
matrix in TYPE, the embedding Q8_0 and the output Q6_K (SmolLM2's vocabulary of 49152, not Llama 3's
128256). Block scales set so values are about N(0, 0.02); the codes and lattice points are random.
Usage: python make_iq_bench_model.py SMOLLM2.gguf OUT.gguf TYPE   (TYPE: IQ2_XXS, IQ3_S, Q2_K, ...)"""
import os
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf.constants import GGML_QUANT_SIZES

src, out, tname = sys.argv[1], sys.argv[2], sys.argv[3]
qt = T[tname]
E, NH, NKV, HD, FF, L = 2048, 32, 8, 64, 8192, 16
rng = np.random.default_rng(5)
r = gguf.GGUFReader(src)
V = len(r.fields["tokenizer.ggml.tokens"].data)
half = lambda x: np.asarray(x, dtype=np.float16).view(np.uint8).reshape(-1, 2)

# Offset of the fp16 super-block scale d, and the size of a typical |code x sub-scale| it multiplies.
D_AT = {T.IQ2_XXS: (0, 40), T.IQ2_XS: (0, 40), T.IQ2_S: (0, 40), T.IQ3_XXS: (0, 100), T.IQ3_S: (0, 128),
        T.IQ1_S: (0, 6), T.IQ4_XS: (0, 1000), T.Q2_K: (80, 12), T.Q3_K: (108, 50), T.Q4_K: (0, 60),
        T.Q5_K: (0, 120), T.Q6_K: (208, 700)}


def blocks(rows, cols, t):
    block, size = GGML_QUANT_SIZES[t]
    b = rng.integers(0, 256, size=(rows * cols // block, size), dtype=np.uint8)
    at, typical = D_AT[t]
    b[:, at:at + 2] = half(np.full(b.shape[0], 0.02 / typical))
    if t in (T.Q2_K, T.Q4_K, T.Q5_K):  # dmin after d
        b[:, at + 2:at + 4] = half(np.full(b.shape[0], 0.02 / typical))
    return b.reshape(rows, -1)


if qt not in D_AT:
    sys.exit("make_iq_bench_model.py: TYPE must be one of " + ", ".join(t.name for t in D_AT))
w = gguf.GGUFWriter(out + ".tmp", "llama")
w.add_block_count(L)
w.add_context_length(4096)
w.add_embedding_length(E)
w.add_feed_forward_length(FF)
w.add_head_count(NH)
w.add_head_count_kv(NKV)
w.add_layer_norm_rms_eps(1e-5)
w.add_rope_freq_base(500000.0)
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
w.add_tensor("token_embd.weight", gguf.quants.quantize((0.02 * rng.standard_normal((V, E))).astype(np.float32), T.Q8_0),
             raw_dtype=T.Q8_0)
w.add_tensor("output_norm.weight", ones(E))
w.add_tensor("output.weight", blocks(V, E, T.Q6_K), raw_dtype=T.Q6_K)
for l in range(L):
    p = "blk.%d." % l
    for n in ("attn_norm", "ffn_norm"):
        w.add_tensor(p + n + ".weight", ones(E))
    for n, rows, cols in (("attn_q", NH * HD, E), ("attn_k", NKV * HD, E), ("attn_v", NKV * HD, E),
                          ("attn_output", E, NH * HD), ("ffn_gate", FF, E), ("ffn_up", FF, E), ("ffn_down", E, FF)):
        w.add_tensor(p + n + ".weight", blocks(rows, cols, qt), raw_dtype=qt)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
os.replace(out + ".tmp", out)
