"""Dequantization references for tests/gguf: random blocks of every ggml type nbits maps
(Q4_0, Q4_1, Q8_0, Q4_K, Q5_K, Q6_K, plus F16 and BF16), and gguf-py's own dequantization
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


for t in (T.Q4_0, T.Q4_1, T.Q8_0, T.Q4_K, T.Q5_K, T.Q6_K):
    block, size = GGML_QUANT_SIZES[t]
    nb = K * N // block
    # Random codes and 6-bit scales; the fp16 scale fields get finite random values.
    b = rng.integers(0, 256, size=(nb, size), dtype=np.uint8)
    d = half(rng.standard_normal(nb) * 0.01)
    m = half(rng.standard_normal(nb) * 0.01)
    if t in (T.Q4_0, T.Q8_0):
        b[:, 0:2] = d
    elif t == T.Q4_1:
        b[:, 0:2], b[:, 2:4] = d, m
    elif t in (T.Q4_K, T.Q5_K):
        b[:, 0:2], b[:, 2:4] = d, m
    elif t == T.Q6_K:
        b[:, 208:210] = d
    data = b.reshape(N, K // block * size)
    ref = gguf.quants.dequantize(data, t).astype(np.float32)
    assert ref.shape == (N, K) and np.isfinite(ref).all()
    w.add_tensor(t.name, data, raw_dtype=t)
    w.add_tensor(t.name + ".ref", ref)

x = rng.standard_normal((N, K)).astype(np.float32)
for t, dt in ((T.F16, np.float16), (T.BF16, None)):
    data = x.astype(np.float16) if dt is not None else gguf.quants.quantize(x, T.BF16)
    w.add_tensor(t.name, data, raw_dtype=t)
    w.add_tensor(t.name + ".ref", gguf.quants.dequantize(data, t).astype(np.float32))

w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
