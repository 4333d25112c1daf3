"""ONNX Runtime's teacher-forced logits on stories260K variants, for tests/llm/ort_teacher_forced_test.cc
(issue 11 item 5): every shared variant (../shared/models/stories260K/onnx_*) plus variants made here with
../shared/tools/llama2c_to_onnx.py (block 64 and 128, int8 with zero points; with K = 64 both larger
blocks hold a whole row). Not made: int4 with zero points at block 128, whose zero_points the tool
packs two rows per byte (shape [128] for N = 256), which ONNX Runtime 1.32 refuses. The token sequence is llama2.c's greedy trace from BOS (reference/greedy_trace.json,
fed_tokens: 256 positions); one ORT run over all 256 (empty past) gives the logits of every position.
Writes OUT/<variant>/ (the made models: model.onnx, genai_config.json, tokenizer files) and
OUT/ort_logits/<variant>.f32 (256 x 512 float32, little endian) + OUT/ort_logits/index.json.
Usage: python stories_teacher_forced.py SHARED_DIR OUT_DIR"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnxruntime as ort

shared, out = sys.argv[1], sys.argv[2]
st = os.path.join(shared, "models/stories260K")
SHARED = ["fp32", "int4", "int4_acc0", "int4_asym", "int4_asym_acc0", "int4_extdata", "int8", "int8_acc0"]
MADE = {  # name: llama2c_to_onnx.py flags (accuracy level 4, head padded to 16 as the shared ones)
    "int4_b64": ["--bits", "4", "--block", "64"],
    "int4_b128": ["--bits", "4", "--block", "128"],
    "int8_asym": ["--bits", "8", "--asym"],
    "int8_b128": ["--bits", "8", "--block", "128"],
}
os.makedirs(os.path.join(out, "ort_logits"), exist_ok=True)
dirs = {v: os.path.join(st, "onnx_" + v) for v in SHARED}
for name, flags in MADE.items():
    d = os.path.join(out, name)
    if not os.path.exists(os.path.join(d, "model.onnx")):
        os.makedirs(d, exist_ok=True)
        subprocess.run([sys.executable, os.path.join(shared, "tools/llama2c_to_onnx.py"), *flags, "--acc", "4",
                        "--pad-head", "16", os.path.join(st, "llama2c/stories260K.bin"), d], check=True,
                       stdout=subprocess.DEVNULL)
        for f in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(os.path.join(st, "onnx_int4", f), d)
    dirs[name] = d
trace = json.load(open(os.path.join(st, "reference/greedy_trace.json")))
ids = trace["cases"][0]["fed_tokens"][:256]
assert len(ids) == 256 and ids[0] == 1
index = {"tokens": ids, "ort_version": ort.__version__, "variants": {}}
for name, d in dirs.items():
    cfg = json.load(open(os.path.join(d, "genai_config.json")))["model"]
    dec = cfg["decoder"]
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(os.path.join(d, "model.onnx"), so, providers=["CPUExecutionProvider"])
    feeds = {"input_ids": np.array([ids], dtype=np.int64),
             "attention_mask": np.ones((1, len(ids)), dtype=np.int64)}
    for l in range(dec["num_hidden_layers"]):
        for kv in ("key", "value"):
            feeds["past_key_values.%d.%s" % (l, kv)] = np.zeros(
                (1, dec["num_key_value_heads"], 0, dec["head_size"]), dtype=np.float32)
    names = [i.name for i in sess.get_inputs()]
    logits = sess.run(["logits"], {k: v for k, v in feeds.items() if k in names})[0][0].astype(np.float32)
    assert logits.shape == (256, cfg["vocab_size"]), logits.shape
    logits.tofile(os.path.join(out, "ort_logits", name + ".f32"))
    # Shared variants by their path under ../shared (the test resolves it), made ones absolute.
    rel = {"shared": "models/stories260K/onnx_" + name} if name in SHARED else {"dir": d}
    index["variants"][name] = {**rel, "vocab": cfg["vocab_size"]}
json.dump(index, open(os.path.join(out, "ort_logits", "index.json"), "w"), indent=1)
