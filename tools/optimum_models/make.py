#!/usr/bin/env python3
"""Makes Hugging Face Optimum / transformers.js (onnx-community) exports, with ONNX Runtime references.

For each case of cases.txt (name family variant ...): the Hugging Face folder of that family
made by tools/builder_models/make.py (random weights, or SmolLM2-135M's real ones), or for
stories260k by llama2c_to_hf.py from llama2.c's stories260K.bin in ../shared, is exported
by the real exporter (optimum-onnx's main_export, task text-generation-with-past: what
`optimum-cli export onnx` and transformers.js' scripts/convert.py run) to onnx/model.onnx, and
the variants are made from it as transformers.js' scripts/quantize.py makes them:
  q4     MatMulNBitsQuantizer (block 32, symmetric, accuracy_level unset)   onnx/model_q4.onnx
  fp16   onnxruntime.transformers.float16 (its default op block list) then onnxslim
                                                                            onnx/model_fp16.onnx
  q4f16  q4 of model.onnx, then the fp16 conversion and onnxslim            onnx/model_q4f16.onnx
  int8   ONNXQuantizer IntegerOps, QInt8 weights (DynamicQuantizeLinear + MatMulInteger,
         Gather of int8 embeddings)                                         onnx/model_int8.onnx
The fp16 conversion keeps no fp32 I/O (keep_io_types=False): logits and the KV cache are fp16, as
in onnx-community's model_fp16 / model_q4f16 files (quantize.py itself passes True).
Then each file is run greedily by ONNX Runtime (the prompt in one step, then one token per step,
the present fed back as past, position_ids given) into onnx/<file stem>.ref.json: prompt, 40 greedy
ids, margins, max_abs_logit, first_logits, the onnxruntime version, the graph's op-type counts and
input/output signature; or no_reference with the reason when ORT cannot run it. The stories260k
fp32 file's also has ort_vs_llama2c: ORT's greedy tokens from greedy_trace.json's prompts, how
many equal llama2.c's.
tjs_reference.mjs (node) then runs transformers.js on the same folders (onnx/<file stem>.tjs.json).

Runs with PYTHONPATH=$NBITS_CACHE/optimum-overlay (transformers 4.57 + optimum-onnx, which need
transformers < 4.58) over the set-up venv (torch, onnx, onnxruntime). A variant whose ref.json
exists is skipped. Usage: make.py HF_DIR OUT_DIR [NAME ...] (HF_DIR: builder-models/hf).
"""
import collections
import json
import os
import shutil
import sys
import time

import logging

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PROMPT = [1, 17, 42, 99, 7, 300, 12, 5]  # tools/builder_models/make.py's
STEPS = 40
FILES = {"fp32": "model.onnx", "fp16": "model_fp16.onnx", "q4": "model_q4.onnx", "q4f16": "model_q4f16.onnx",
         "int8": "model_int8.onnx"}

# name -> (family, [variant ...]), from cases.txt (shared with tests/llm/optimum_exports_test.cc).
CASES = {}
with open(os.path.join(HERE, "cases.txt")) as f:
    for line in f:
        parts = line.split("#")[0].split()
        if parts:
            CASES[parts[0]] = (parts[1], parts[2:])


def hf_config_for_457(src, dst):
    """A copy of the HF folder whose config.json transformers 4.57 reads as 5.24 meant it.

    transformers 5.x writes rope_parameters (per layer type for Gemma-3) and no rope_theta;
    4.57 ignores rope_parameters and would take its default theta (10000: wrong for SmolLM2's
    100000). The weights and tokenizer are linked, not copied."""
    os.makedirs(dst, exist_ok=True)
    with open(os.path.join(src, "config.json")) as f:
        c = json.load(f)
    rp = c.get("rope_parameters")
    if rp:
        if "full_attention" in rp:  # Gemma-3: global and local (sliding) rotary bases
            c["rope_theta"] = rp["full_attention"]["rope_theta"]
            c["rope_local_base_freq"] = rp["sliding_attention"]["rope_theta"]
            if rp["full_attention"].get("rope_type", "default") != "default":
                c["rope_scaling"] = rp["full_attention"]
        else:
            c["rope_theta"] = rp["rope_theta"]
            if "partial_rotary_factor" in rp:
                c["partial_rotary_factor"] = rp["partial_rotary_factor"]
            if rp.get("rope_type", "default") == "longrope":
                # 4.57's Phi3Config takes exactly these three fields (the original context is
                # original_max_position_embeddings at the top level, as 5.24 also writes it).
                c["rope_scaling"] = {"type": "longrope", "short_factor": rp["short_factor"],
                                     "long_factor": rp["long_factor"]}
            elif rp.get("rope_type", "default") != "default":
                c["rope_scaling"] = rp
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(c, f, indent=2)
    for name in os.listdir(src):
        link = os.path.join(dst, name)
        if name != "config.json" and not os.path.lexists(link):
            os.symlink(os.path.join(src, name), link)


# Families tools/builder_models/make.py has no builder case for (builder 0.18 fails on them), made here
# the same way (its COMMON sizes, seed and N(0, 0.25) weights) into OUT_DIR/hf.
# gemma2cap: Gemma-2's attention and final logit softcapping with caps small enough that tanh
# bends these random weights' scores and logits (Gemma-2's own 50 / 30 would leave them linear).
EXTRA_FAMILIES = {"gemma3": ("Gemma3TextConfig", dict(head_dim=16)),
                  "gemma2cap": ("Gemma2Config", dict(head_dim=16, sliding_window=16, query_pre_attn_scalar=16,
                                                     attn_logit_softcapping=2.0, final_logit_softcapping=5.0)),
                  # SmolLM3: NoPE layers (no_rope_layers[i] == 0: layer i has no rotary), tied embeddings.
                  "smollm3": ("SmolLM3Config", dict(pad_token_id=0, bos_token_id=1, eos_token_id=2,
                                                    no_rope_layers=[1, 0])),
                  # Llama-3.2: llama3 rope scaling (frequencies with wavelengths above
                  # original_max_position_embeddings / low_freq_factor divided by factor, those between
                  # it and / high_freq_factor blended), tied embeddings. The wavelengths of head_dim 16
                  # at theta 500000 span all three regimes for an original context of 64.
                  "llama32": ("LlamaConfig", dict(head_dim=16, tie_word_embeddings=True,
                                                  rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0,
                                                                   "factor": 32.0, "low_freq_factor": 1.0,
                                                                   "high_freq_factor": 4.0,
                                                                   "original_max_position_embeddings": 64}))}


# Families converted from a llama2.c checkpoint of ../shared by llama2c_to_hf.py (real trained
# weights; the test checks the fp32 export against llama2.c's own greedy run) into OUT_DIR/hf.
SHARED = os.environ.get("NBITS_SHARED") or os.path.join(HERE, "..", "..", "..", "shared")
LLAMA2C_FAMILIES = {"stories260k": "models/stories260K/llama2c/stories260K.bin"}
LLAMA2C_TRACE = "models/stories260K/reference/greedy_trace.json"


def hf_folder(family, hf_root, out_dir):
    """The Hugging Face folder of a family, made by tools/builder_models/make.py's make_hf when absent.

    It runs in the venv's own transformers (5.24, as for the builder exports: no overlay), so the
    weights are exactly those of the builder exports of the same family."""
    import subprocess
    if family in LLAMA2C_FAMILIES:
        hf = os.path.join(out_dir, "hf", family)
        if not os.path.exists(os.path.join(hf, "config.json")):
            subprocess.run([sys.executable, os.path.join(HERE, "llama2c_to_hf.py"),
                            os.path.join(SHARED, LLAMA2C_FAMILIES[family]), hf], check=True)
        return hf
    hf = os.path.join(os.path.join(out_dir, "hf") if family in EXTRA_FAMILIES else hf_root, family)
    if os.path.exists(os.path.join(hf, "config.json")):
        return hf
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import make; make.FAMILIES.update(eval(sys.argv[4])); "
            "make.make_hf(sys.argv[2], sys.argv[3])")
    subprocess.run([sys.executable, "-c", code, os.path.join(HERE, "..", "builder_models"), family, hf,
                    repr(EXTRA_FAMILIES)], check=True, env=env)
    return hf


# Cases exported with transformers' eager attention (config.json attn_implementation): optimum-onnx
# loads with SDPA, whose attention ignores Gemma-2's attn_logit_softcapping (no Tanh on the scores
# in the file); eager writes it out as Div / Tanh / Mul before the mask.
EAGER_CASES = {"gemma2cap_eager"}


def export(hf, folder, work, eager=False):
    """optimum-onnx's exporter: folder/onnx/model.onnx, config.json, generation_config.json, tokenizer."""
    from optimum.exporters.onnx import main_export
    fixed = os.path.join(work, "hf457")
    shutil.rmtree(fixed, ignore_errors=True)
    hf_config_for_457(hf, fixed)

    out = os.path.join(work, "export")
    shutil.rmtree(out, ignore_errors=True)
    t = time.time()
    if eager:  # the same exporter on the model loaded with eager attention (main_export loads SDPA)
        from optimum.exporters.onnx import onnx_export_from_model
        from transformers import AutoModelForCausalLM, GenerationConfig
        model = AutoModelForCausalLM.from_pretrained(fixed, attn_implementation="eager")
        onnx_export_from_model(model, out, task="text-generation-with-past", device="cpu", do_validation=False)
        model.config.save_pretrained(out)
        if not os.path.exists(os.path.join(out, "generation_config.json")):
            GenerationConfig.from_model_config(model.config).save_pretrained(out)
    else:
        main_export(fixed, out, task="text-generation-with-past", device="cpu", do_validation=False)
    seconds = time.time() - t
    os.makedirs(os.path.join(folder, "onnx"), exist_ok=True)
    # The onnx-community layout: the exporter's config.json (4.57's serialisation of the fixed one),
    # generation_config.json, the tokenizer files of the HF folder, the graph under onnx/.
    for name in ("config.json", "generation_config.json"):
        shutil.copy(os.path.join(out, name), os.path.join(folder, name))
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        if os.path.exists(os.path.join(hf, name)):
            shutil.copy(os.path.join(hf, name), os.path.join(folder, name))
    for name in os.listdir(out):
        if name.startswith("model.onnx"):  # model.onnx (+ model.onnx_data for > 2 GB)
            os.replace(os.path.join(out, name), os.path.join(folder, "onnx", name))
    shutil.rmtree(out)
    shutil.rmtree(fixed)
    return seconds


def save(model, path):
    import onnx
    # One file below 2 GB, as the exporter writes; onnx-community's large ones use <file>_data.
    big = model.ByteSize() >= onnx.checker.MAXIMUM_PROTOBUF
    onnx.save_model(model, path, save_as_external_data=big, location=os.path.basename(path) + "_data")


def to_fp16(model):
    import onnxslim
    from onnxruntime.transformers import float16
    m = float16.convert_float_to_float16(model, keep_io_types=False,
                                         op_block_list=set(float16.DEFAULT_OP_BLOCK_LIST))
    m = onnxslim.slim(m)
    # onnxslim 0.1.98's shape inference leaves untyped value_info (elem_type 0) on the first
    # MatMulNBits (com.microsoft) output and the Reshape after it; ORT refuses the file
    # ("Invalid tensor data type 0"). Those entries carry no information: drop them.
    keep = [v for v in m.graph.value_info if v.type.tensor_type.elem_type != 0]
    del m.graph.value_info[:]
    m.graph.value_info.extend(keep)
    return m


def to_q4(model):
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
    q = MatMulNBitsQuantizer(model=model, block_size=32, is_symmetric=True, accuracy_level=None)
    q.process()
    return q.model.model


def to_int8(model):
    from onnxruntime.quantization import QuantizationMode, QuantType
    from onnxruntime.quantization.onnx_quantizer import ONNXQuantizer
    from onnxruntime.quantization.registry import IntegerOpsRegistry
    q = ONNXQuantizer(model, False, False, mode=QuantizationMode.IntegerOps, static=False,
                      weight_qType=QuantType.QInt8, activation_qType=QuantType.QUInt8, tensors_range=None,
                      nodes_to_quantize=[], nodes_to_exclude=[], op_types_to_quantize=set(IntegerOpsRegistry.keys()),
                      extra_options=dict(EnableSubgraph=True, MatMulConstBOnly=True))
    q.quantize_model()
    return q.model.model


def make_variant(variant, fp32_path, out_path):
    import onnx
    model = onnx.load(fp32_path)
    if variant == "fp16":
        model = to_fp16(model)
    elif variant == "q4":
        model = to_q4(model)
    elif variant == "q4f16":
        model = to_fp16(to_q4(model))
    elif variant == "int8":
        model = to_int8(model)
    else:
        raise ValueError(f"unknown variant {variant}")
    save(model, out_path + ".tmp")
    os.replace(out_path + ".tmp", out_path)


class NoReference(Exception):
    """ONNX Runtime cannot run the file: the test compares with the fp32 file's reference."""


def signature(path):
    import onnx
    m = onnx.load(path, load_external_data=False)
    ops = collections.Counter((n.domain + "." if n.domain not in ("", "ai.onnx") else "") + n.op_type
                              for n in m.graph.node)

    def io(values):
        return [[v.name, onnx.TensorProto.DataType.Name(v.type.tensor_type.elem_type).lower(),
                 [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]] for v in values]

    opsets = {(o.domain or "ai.onnx"): o.version for o in m.opset_import}
    return {"op_types": dict(sorted(ops.items())), "nodes": len(m.graph.node), "opsets": opsets,
            "inputs": io(m.graph.input), "outputs": io(m.graph.output)}


def ort_reference(path, level=None, steps=STEPS, prompt=PROMPT):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.log_severity_level = 3
    if level is not None:
        so.graph_optimization_level = level
    try:
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - a kernel ORT's CPU provider lacks
        raise NoReference(f"ONNX Runtime {ort.__version__} cannot load it: {str(e).splitlines()[0][:300]}")
    types = {"tensor(float)": np.float32, "tensor(float16)": np.float16}
    past_names = [i.name for i in sess.get_inputs() if i.name.startswith("past_key_values.")]
    inputs = {i.name: i for i in sess.get_inputs()}
    known = {"input_ids", "attention_mask", "position_ids"} | set(past_names)
    unknown = sorted(set(inputs) - known)
    if unknown:
        raise NoReference(f"inputs this reference does not feed: {unknown}")
    past = {}
    for n in past_names:
        shape = inputs[n].shape  # [batch, num_key_value_heads, past_sequence_length, head_dim]
        past[n] = np.zeros((1, shape[1], 0, shape[3]), dtype=types[inputs[n].type])
    out_names = [o.name for o in sess.get_outputs()]
    ids, feed_ids = list(prompt), list(prompt)
    out_ids, margins, maxabs, first = [], [], [], None
    for _ in range(steps):
        T = len(ids)
        feed = {"input_ids": np.array([feed_ids], dtype=np.int64),
                "attention_mask": np.ones((1, T), dtype=np.int64)}
        if "position_ids" in inputs:
            feed["position_ids"] = np.arange(T - len(feed_ids), T, dtype=np.int64)[None, :]
        feed.update(past)
        res = dict(zip(out_names, sess.run(None, feed)))
        logits = res["logits"][0, -1].astype(np.float64)
        if not np.all(np.isfinite(logits)):
            raise NoReference(f"ONNX Runtime {ort.__version__} gives non-finite logits at step {len(out_ids)}")
        if first is None:
            first = logits.tolist()
        order = np.argsort(-logits)
        margins.append(float(logits[order[0]] - logits[order[1]]))
        maxabs.append(float(np.max(np.abs(logits))))
        tok = int(order[0])
        out_ids.append(tok)
        for n in past_names:
            past[n] = res["present." + n[len("past_key_values."):]]
        ids.append(tok)
        feed_ids = [tok]
    return {"prompt": list(prompt), "ids": out_ids, "margins": margins, "max_abs_logit": maxabs, "first_logits": first,
            "onnxruntime": ort.__version__}


def ort_spread(path, ref):
    """How far ONNX Runtime is from itself on this file: the run above (all graph optimizations)
    against one with basic optimizations only (constant folding, no fusions).

    DynamicQuantizeLinear rounds each activation tensor to uint8 with one scale per tensor: a
    1-ulp difference upstream (folded constants, a fused RMSNorm) moves a value across a rounding
    boundary or an outlier's range, a whole quantization step, and real weights' outlier-heavy
    hidden states turn that into percents of max|logit| (SmolLM2-135M: ~10%, greedy parting at
    step 0). The test reads nbits' difference from ORT against this spread."""
    import onnxruntime as ort
    other = ort_reference(path, ort.GraphOptimizationLevel.ORT_ENABLE_BASIC)
    a, b = np.array(ref["first_logits"]), np.array(other["first_logits"])
    agree = next((i for i, (x, y) in enumerate(zip(ref["ids"], other["ids"])) if x != y), len(ref["ids"]))
    return {"ort_basic_first_rel": float(np.max(np.abs(a - b)) / np.max(np.abs(a))), "ort_basic_ids_agree": agree}


def llama2c_check(path):
    """ORT's greedy run of the fp32 export of a llama2.c checkpoint against llama2.c's own
    (greedy_trace.json: 256 positions from each prompt): the converter's check, independent of nbits."""
    with open(os.path.join(SHARED, LLAMA2C_TRACE)) as f:
        trace = json.load(f)
    rows = []
    for c in trace["cases"]:
        p = c["prompt_ids_with_bos"]
        want = c["fed_tokens"][len(p):] + [c["argmax_per_pos"][-1]]
        got = ort_reference(path, steps=len(want), prompt=p)["ids"]
        rows.append({"prompt": c["prompt"], "steps": len(want),
                     "equal": next((i for i, (x, y) in enumerate(zip(got, want)) if x != y), len(want))})
    return {"ort_vs_llama2c": rows}


def exact_int8_reference(path, work):
    """ORT on the int8 file with its activations left unrounded: each MatMulInteger(
    DynamicQuantizeLinear(x), W_q) becomes MatMul(x / scale_x, W_q - W_zp) in float (the Cast and
    scale Muls after it unchanged), i.e. x times the dequantized int8 weights. The first step's
    logits: the accuracy yardstick when nbits rounds activations otherwise than ORT's one uint8
    scale per tensor (finer: per row and block of 32)."""
    import onnx
    from onnx import TensorProto, helper
    m = onnx.load(path)
    g = m.graph
    dql = {n.output[0]: n for n in g.node if n.op_type == "DynamicQuantizeLinear"}
    nodes = []
    for n in g.node:
        if n.op_type != "MatMulInteger" or n.input[0] not in dql:
            nodes.append(n)
            continue
        q = dql[n.input[0]]
        p = n.output[0] + "_exact_"
        nodes.append(helper.make_node("Div", [q.input[0], q.output[1]], [p + "x"]))
        nodes.append(helper.make_node("Cast", [n.input[1]], [p + "w"], to=TensorProto.FLOAT))
        w = p + "w"
        if len(n.input) > 3 and n.input[3]:
            nodes.append(helper.make_node("Cast", [n.input[3]], [p + "wzp"], to=TensorProto.FLOAT))
            nodes.append(helper.make_node("Sub", [w, p + "wzp"], [p + "wd"]))
            w = p + "wd"
        nodes.append(helper.make_node("MatMul", [p + "x", w], [n.output[0]]))  # float; the Cast after it: a no-op
    del g.node[:]
    g.node.extend(nodes)
    del g.value_info[:]  # the MatMulInteger outputs were int32
    os.makedirs(work, exist_ok=True)
    tmp = os.path.join(work, "exact_int8.onnx")
    onnx.save(m, tmp)
    try:
        r = ort_reference(tmp, steps=1)
    finally:
        os.remove(tmp)
    return {"exact_first_logits": r["first_logits"]}


def versions():
    import importlib.metadata as md
    return {p: md.version(p) for p in ("optimum-onnx", "optimum", "transformers", "torch", "onnx", "onnxruntime",
                                       "onnxslim")}


def run_case(name, hf_root, out_dir):
    family, variants = CASES[name]
    folder = os.path.join(out_dir, name)
    onnx_dir = os.path.join(folder, "onnx")

    def ref_path(v):
        return os.path.join(onnx_dir, os.path.splitext(FILES[v])[0] + ".ref.json")

    todo = [v for v in variants if not os.path.exists(ref_path(v))]
    if not todo:
        return []
    hf = hf_folder(family, hf_root, out_dir)
    fp32 = os.path.join(onnx_dir, FILES["fp32"])
    export_seconds = None
    if not os.path.exists(fp32):
        work = os.path.join(out_dir, ".work", name)
        os.makedirs(work, exist_ok=True)
        export_seconds = export(hf, folder, work, eager=name in EAGER_CASES)
        shutil.rmtree(work, ignore_errors=True)
        with open(os.path.join(folder, "export.json"), "w") as f:
            json.dump({"family": family, "export_seconds": round(export_seconds, 2), **versions()}, f, indent=1)
    failed = []
    for v in todo:
        path = os.path.join(onnx_dir, FILES[v])
        t, made = time.time(), v != "fp32" and not os.path.exists(path)
        try:
            if made:
                make_variant(v, fp32, path)
        except Exception as e:  # noqa: BLE001 - record and go on with the other variants
            print(f"{name} {v}: making it failed: {e}", flush=True)
            failed.append(f"{name}:{v}")
            continue
        make_seconds = time.time() - t if made else None  # None: made by an earlier run
        data = {"case": name, "family": family, "variant": v, "file": FILES[v],
                "bytes": sum(os.path.getsize(os.path.join(onnx_dir, n)) for n in os.listdir(onnx_dir)
                             if n == FILES[v] or n == FILES[v] + "_data"),
                "make_seconds": round(export_seconds, 2) if v == "fp32" and export_seconds
                else round(make_seconds, 2) if make_seconds is not None else None,
                **versions(), **signature(path)}
        t = time.time()
        try:
            data.update(ort_reference(path))
            if v == "fp32" and family in LLAMA2C_FAMILIES:
                data.update(llama2c_check(path))
            if v == "int8":
                data.update(ort_spread(path, data))
                data.update(exact_int8_reference(path, os.path.join(out_dir, ".work")))
        except NoReference as e:
            data["no_reference"] = str(e)
        data["reference_seconds"] = round(time.time() - t, 2)
        rp = ref_path(v)
        with open(rp + ".tmp", "w") as f:
            json.dump(data, f)
        os.replace(rp + ".tmp", rp)
        print(f"made {name}/{FILES[v]} ({data['bytes'] / 1e6:.1f} MB, {data['make_seconds']} s"
              f"{'; no reference: ' + data['no_reference'] if 'no_reference' in data else ''})", flush=True)
    return failed


def main():
    logging.disable(logging.INFO)  # the quantizers log every node
    import warnings
    warnings.filterwarnings("ignore")  # the tracer's TracerWarnings: expected for these graphs
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    hf_root, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    names = sys.argv[3:] or list(CASES)
    failed = []
    for n in names:
        if n not in CASES:
            raise SystemExit(f"unknown case {n}; cases: {' '.join(CASES)}")
        try:
            failed += run_case(n, hf_root, out_dir)
        except Exception as e:  # noqa: BLE001 - report every failed case, then fail
            print(f"{n}: {type(e).__name__}: {e}", flush=True)
            failed.append(n)
    if failed:
        raise SystemExit(f"{len(failed)} case(s) failed: {' '.join(failed)}")


if __name__ == "__main__":
    main()
