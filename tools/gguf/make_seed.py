"""Writes a small valid GGUF file as the seed corpus of fuzz_gguf_reader: every metadata value
type, string arrays, and a complete one-layer llama model (hidden 32, vocab 4) whose matrices are
Q8_0, Q4_0, Q4_1 and F16, so the fuzzer reaches the model synthesis too; with `moe`, a one-layer
qwen3moe instead (4 Q8_0 experts of FFN 32, top-2, F32 router, q/k norms), for the expert checks.
Usage: python make_seed.py OUT.gguf [moe]   (needs the `gguf` package; tools/setup_models.sh's venv)"""
import sys

import numpy as np
import gguf

moe = len(sys.argv) > 2 and sys.argv[2] == "moe"
arch = "qwen3moe" if moe else "llama"
w = gguf.GGUFWriter(sys.argv[1], arch)
w.add_uint32(arch + ".block_count", 1)
w.add_uint32(arch + ".context_length", 64)
w.add_uint32(arch + ".embedding_length", 32)
w.add_uint32(arch + ".attention.head_count", 2)
w.add_uint32(arch + ".attention.head_count_kv", 1)
w.add_float32(arch + ".attention.layer_norm_rms_epsilon", 1e-5)
if moe:
    w.add_uint32(arch + ".expert_count", 4)
    w.add_uint32(arch + ".expert_used_count", 2)
w.add_uint8("t.u8", 200)
w.add_int8("t.i8", -5)
w.add_uint16("t.u16", 60000)
w.add_int16("t.i16", -300)
w.add_int32("t.i32", -7)
w.add_float32("t.f32", 1.5)
w.add_bool("t.bool", True)
w.add_uint64("t.u64", 1 << 40)
w.add_int64("t.i64", -(1 << 40))
w.add_float64("t.f64", 1e-5)
w.add_array("tokenizer.ggml.tokens", ["a", "bc", "", "<s>"])
w.add_array("tokenizer.ggml.scores", [0.0, -1.0, -2.0, 0.5])
w.add_array("tokenizer.ggml.token_type", [1, 1, 1, 3])
rng = np.random.default_rng(0)
T = gguf.GGMLQuantizationType


def mat(name, rows, cols, t):
    x = rng.standard_normal((rows, cols), dtype=np.float32) * 0.1
    if t == T.F16:
        w.add_tensor(name, x.astype(np.float16))
    else:
        w.add_tensor(name, gguf.quants.quantize(x, t), raw_dtype=t)


w.add_tensor("token_embd.weight", rng.standard_normal((4, 32), dtype=np.float32))
w.add_tensor("output_norm.weight", np.ones(32, dtype=np.float32))
w.add_tensor("blk.0.attn_norm.weight", np.ones(32, dtype=np.float32))
w.add_tensor("blk.0.ffn_norm.weight", np.ones(32, dtype=np.float32))
mat("blk.0.attn_q.weight", 32, 32, T.Q8_0)
mat("blk.0.attn_k.weight", 16, 32, T.Q8_0)
mat("blk.0.attn_v.weight", 16, 32, T.Q8_0)
mat("blk.0.attn_output.weight", 32, 32, T.Q4_0)
if moe:
    w.add_tensor("blk.0.attn_q_norm.weight", np.ones(16, dtype=np.float32))
    w.add_tensor("blk.0.attn_k_norm.weight", np.ones(16, dtype=np.float32))
    w.add_tensor("blk.0.ffn_gate_inp.weight", rng.standard_normal((4, 32), dtype=np.float32))
    for n, rows, cols in (("ffn_gate_exps", 32, 32), ("ffn_up_exps", 32, 32), ("ffn_down_exps", 32, 32)):
        x = rng.standard_normal((4, rows, cols), dtype=np.float32) * 0.1
        w.add_tensor("blk.0.%s.weight" % n, gguf.quants.quantize(x, T.Q8_0), raw_dtype=T.Q8_0)
else:
    mat("blk.0.ffn_gate.weight", 64, 32, T.Q4_1)
    mat("blk.0.ffn_up.weight", 64, 32, T.Q4_1)
    mat("blk.0.ffn_down.weight", 32, 64, T.F16)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
