"""Dequantization references for tests/gguf: random blocks of every ggml type nbits maps
(src/gguf/block_decode.h: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K..Q6_K, IQ4_NL, IQ4_XS, TQ1_0,
TQ2_0, MXFP4, NVFP4, the lattice types IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, plus F16
and BF16), and gguf-py's own dequantization
(gguf.quants.dequantize, the python port of ggml's) of each, written as one GGUF file:
tensor "<type>" holds the blocks ([K, N] = [512, 6]), "<type>.ref" the F32 values.
Usage: python make_quant_refs.py OUT.gguf   (gguf 0.19 from tools/setup_models.sh's venv)"""
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf.constants import GGML_QUANT_SIZES

K, N = 512, 6
rng = np.random.default_rng(20261201)
w = gguf.GGUFWriter(sys.argv[1], "quant-refs")


def half(x):
    return np.asarray(x, dtype=np.float16).view(np.uint8).reshape(-1, 2)


# Byte offset of each type's fp16 scale fields (d, then dmin / m where it has one); the rest of
# each block (codes, packed sub-block scales) is random.
HALVES = {T.Q4_0: (0,), T.Q4_1: (0, 2), T.Q5_0: (0,), T.Q5_1: (0, 2), T.Q8_0: (0,), T.Q2_K: (80, 82),
          T.Q3_K: (108,), T.Q4_K: (0, 2), T.Q5_K: (0, 2), T.Q6_K: (208,), T.IQ4_NL: (0,), T.IQ4_XS: (0,),
          T.TQ1_0: (52,), T.TQ2_0: (64,), T.IQ2_XXS: (0,), T.IQ2_XS: (0,), T.IQ2_S: (0,), T.IQ3_XXS: (0,),
          T.IQ3_S: (0,), T.IQ1_S: (0,)}
TYPES = list(HALVES) + [T.MXFP4, T.NVFP4, T.IQ1_M]

for t in TYPES:
    block, size = GGML_QUANT_SIZES[t]
    nb = K * N // block
    b = rng.integers(0, 256, size=(nb, size), dtype=np.uint8)
    for off in HALVES.get(t, ()):
        b[:, off:off + 2] = half(rng.standard_normal(nb) * 0.01)
    if t == T.IQ1_M:  # its fp16 d lies in the top nibbles of the four scale words (bytes 48..55)
        d = np.asarray(rng.standard_normal(nb) * 0.01, dtype=np.float16).view(np.uint16)
        for i in range(4):
            b[:, 49 + 2 * i] = (b[:, 49 + 2 * i] & 0x0F) | (((d >> (4 * i)) & 0xF) << 4).astype(np.uint8)
    if t == T.MXFP4:  # the e8m0 exponent: 2^(e-128) times levels up to 12 stays finite and normal
        b[:, 0] = rng.integers(100, 150, size=nb)
    data = b.reshape(N, K // block * size)
    ref = gguf.quants.dequantize(data, t).astype(np.float32)
    assert ref.shape == (N, K) and np.isfinite(ref).all()
    w.add_tensor(t.name, data, raw_dtype=t)
    w.add_tensor(t.name + ".ref", ref)

# Q1_0 (a sign bit per value, one fp16 d per 128; ggml's dequantize_row_q1_0): gguf-py 0.19 has no
# dequantization of it, so the reference is that definition, d * (bit ? 1 : -1).
nb = K * N // 128
b = rng.integers(0, 256, size=(nb, 18), dtype=np.uint8)
b[:, 0:2] = half(rng.standard_normal(nb) * 0.01)
d = b[:, 0:2].copy().view(np.float16).astype(np.float32)
bits = np.unpackbits(b[:, 2:], axis=1, bitorder="little").astype(np.float32)
w.add_tensor("Q1_0", b.reshape(N, K // 128 * 18), raw_dtype=T.Q1_0)
w.add_tensor("Q1_0.ref", (d * (2 * bits - 1)).reshape(N, K))

x = rng.standard_normal((N, K)).astype(np.float32)
for t, dt in ((T.F16, np.float16), (T.BF16, None)):
    data = x.astype(np.float16) if dt is not None else gguf.quants.quantize(x, T.BF16)
    w.add_tensor(t.name, data, raw_dtype=t)
    w.add_tensor(t.name + ".ref", gguf.quants.dequantize(data, t).astype(np.float32))

w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
