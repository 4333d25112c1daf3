"""Writes a small valid GGUF file (every metadata value type, string arrays, a few
tensors of several ggml types) as the seed corpus of fuzz_gguf_reader.
Usage: python make_seed.py OUT.gguf   (needs the `gguf` package; tools/setup_models.sh's venv)"""
import sys

import numpy as np
import gguf

w = gguf.GGUFWriter(sys.argv[1], "llama")
w.add_uint32("llama.block_count", 1)
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
w.add_tensor("token_embd.weight", rng.standard_normal((4, 32), dtype=np.float32))
w.add_tensor("output_norm.weight", np.ones(32, dtype=np.float16))
q8 = gguf.quants.quantize(rng.standard_normal((2, 64), dtype=np.float32), gguf.GGMLQuantizationType.Q8_0)
w.add_tensor("blk.0.attn_q.weight", q8, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
