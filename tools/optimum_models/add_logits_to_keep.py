"""Adds the inputs newer exporters give a decoder to an Optimum export, as a test asset.

    python add_logits_to_keep.py SRC_FOLDER DST_FOLDER

optimum-onnx 0.1.0 emits neither `logits_to_keep` nor merged decoders' `use_cache_branch`, so
this writes DST_FOLDER (config / tokenizer files copied, onnx/model.onnx rewritten) whose decoder
takes both, with transformers' meaning:
  logits = Slice(logits_all, start = (k == 0 ? 0 : -k), axis 1)    k = logits_to_keep (int64 scalar)
  logits = logits * (use_cache_branch == (past length > 0))        use_cache_branch: bool [1]
so a runtime that feeds use_cache_branch wrongly gets zero logits, and one that asks for the
wrong rows gets the wrong shape. Past length = attention_mask's length - input_ids' length (the
past tensors' own length is the cache capacity when a runtime shares one buffer). Skipped when
DST_FOLDER/onnx/model.onnx exists.
"""
import os
import shutil
import sys

import onnx
from onnx import TensorProto, helper


def main(src, dst):
    out = os.path.join(dst, "onnx", "model.onnx")
    if os.path.exists(out):
        return
    os.makedirs(os.path.dirname(out), exist_ok=True)
    for f in os.listdir(src):
        if os.path.isfile(os.path.join(src, f)):
            shutil.copy(os.path.join(src, f), dst)
    m = onnx.load(os.path.join(src, "onnx", "model.onnx"))
    g = m.graph
    for n in g.node:
        for i, o in enumerate(n.output):
            if o == "logits":
                n.output[i] = "logits_all"
    g.input.append(helper.make_tensor_value_info("logits_to_keep", TensorProto.INT64, []))
    g.input.append(helper.make_tensor_value_info("use_cache_branch", TensorProto.BOOL, [1]))
    c = lambda name, v: g.initializer.append(helper.make_tensor(name, TensorProto.INT64, [len(v)], v))
    c("ltk/zero", [0])
    c("ltk/end", [2**62])
    c("ltk/axis", [1])
    c("ltk/one", [1])
    g.node.extend([
        helper.make_node("Unsqueeze", ["logits_to_keep", "ltk/zero"], ["ltk/k"]),
        helper.make_node("Equal", ["ltk/k", "ltk/zero"], ["ltk/all"]),
        helper.make_node("Neg", ["ltk/k"], ["ltk/neg"]),
        helper.make_node("Where", ["ltk/all", "ltk/zero", "ltk/neg"], ["ltk/start"]),
        helper.make_node("Slice", ["logits_all", "ltk/start", "ltk/end", "ltk/axis"], ["ltk/kept"]),
        helper.make_node("Shape", ["attention_mask"], ["ucb/mask_shape"], start=1, end=2),
        helper.make_node("Shape", ["input_ids"], ["ucb/ids_shape"], start=1, end=2),
        helper.make_node("Sub", ["ucb/mask_shape", "ucb/ids_shape"], ["ucb/past"]),
        helper.make_node("Greater", ["ucb/past", "ltk/zero"], ["ucb/has_past"]),
        helper.make_node("Equal", ["use_cache_branch", "ucb/has_past"], ["ucb/ok"]),
        helper.make_node("Cast", ["ucb/ok"], ["ucb/ok_f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["ltk/kept", "ucb/ok_f"], ["logits"]),
    ])
    onnx.checker.check_model(m)
    onnx.save(m, out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
