#!/usr/bin/env python3
"""Makes the onnxruntime-genai builder exports nbits is tested on, with ONNX Runtime references.

For each case: a small random-initialised Hugging Face model of one family
(AutoConfig -> AutoModelForCausalLM.from_config -> save_pretrained, SmolLM2's real
tokenizer from ../shared), exported by the real builder
(python -m onnxruntime_genai.models.builder -p PRECISION -e cpu [--extra_options ...]),
then run greedily by ONNX Runtime (plain InferenceSession, the past fed back as
present) to write ref.json: the prompt, 40 greedy ids, the first step's logits and
each step's top-1/top-2 margin and max|logit|. A case whose ref.json exists is
skipped. Usage: make.py OUT_DIR [CASE ...] (default: every case).
"""
import json
import os
import subprocess
import sys

import numpy as np

SHARED = os.environ.get("NBITS_SHARED", os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared"))
COMMON = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, vocab_size=512, max_position_embeddings=512)
# family -> (transformers config class, extra config fields)
FAMILIES = {
    "llama": ("LlamaConfig", dict(head_dim=16)),
    "qwen2": ("Qwen2Config", dict()),
    "qwen3": ("Qwen3Config", dict(head_dim=16)),
    "mistral": ("MistralConfig", dict(head_dim=16)),
    "phi3": ("Phi3Config", dict(pad_token_id=0, sliding_window=16, original_max_position_embeddings=512)),
    # Phi-3.x / Phi-4-mini long context: LongRoPE short/long caches chosen by an If on the length.
    "phi3long": ("Phi3Config", dict(pad_token_id=0, original_max_position_embeddings=32,
                                    rope_scaling={"rope_type": "longrope", "type": "longrope",
                                                  "short_factor": [1.0 + 0.1 * i for i in range(8)],
                                                  "long_factor": [2.0 + 0.5 * i for i in range(8)]})),
    "qwen2tied": ("Qwen2Config", dict(tie_word_embeddings=True)),
    "gemma2": ("Gemma2Config", dict(head_dim=16, sliding_window=16)),
    "granite": ("GraniteConfig", dict()),
    # gpt-oss: 8 experts, top 2 (MoE / QMoE ops), attention sinks, alternating 16-token windows.
    "gptoss": ("GptOssConfig", dict(head_dim=16, num_local_experts=8, num_experts_per_tok=2, sliding_window=16)),
}
# case name -> (family, precision, extra_options), from cases.txt (shared with the C++ test).
CASES = {}
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases.txt")) as f:
    for line in f:
        parts = line.split("#")[0].split()
        if parts:
            CASES[parts[0]] = (parts[1], parts[2], dict(p.split("=", 1) for p in parts[3:]))

PROMPT = [1, 17, 42, 99, 7, 300, 12, 5]
STEPS = 40


# Real trained weights: SmolLM2-135M-Instruct from its Q4_1 GGUF (tools/setup_models.sh fetches it),
# dequantized by transformers into a float32 Hugging Face folder.
REAL = {"smollm2": os.path.join(os.environ.get("NBITS_CACHE", os.path.expanduser("~/.cache/nbits")), "smollm2",
                                "SmolLM2-135M-Instruct.Q4_1.gguf")}


def make_real_hf(family, out):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    path = REAL[family]
    d, f = os.path.dirname(path), os.path.basename(path)
    q = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32)
    cfg = q.config
    if hasattr(cfg, "quantization_config"):
        del cfg.quantization_config
    m = AutoModelForCausalLM.from_config(cfg)  # a plain float model holding the dequantized weights
    m.load_state_dict(q.state_dict(), strict=False)
    m.tie_weights()
    m.save_pretrained(out)
    AutoTokenizer.from_pretrained(d, gguf_file=f).save_pretrained(out)


def make_hf(family, out):
    if family in REAL:
        return make_real_hf(family, out)
    import torch
    import transformers
    from transformers import AutoModelForCausalLM
    cls, extra = FAMILIES[family]
    cfg = getattr(transformers, cls)(**COMMON, **extra)
    torch.manual_seed(1234)
    m = AutoModelForCausalLM.from_config(cfg)
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0.0, 0.25)
    m.save_pretrained(out)
    if family == "gptoss":
        add_mxfp4_experts(out)
    tok = os.path.join(SHARED, "tokenizers", "smollm2")
    for f in ("tokenizer.json", "tokenizer_config.json"):
        with open(os.path.join(tok, f), "rb") as src, open(os.path.join(out, f), "wb") as dst:
            dst.write(src.read())


def add_mxfp4_experts(out):
    """gpt-oss checkpoints ship their experts as MXFP4 (`*_blocks` [E, N, K/32, 16] nibble pairs,
    `*_scales` [E, N, K/32] e8m0): the builder's QMoE path reads only those. Adds them to the
    saved model, quantized from its float experts ([E, K, N] in transformers)."""
    import torch
    from safetensors.torch import load_file, save_file
    path = os.path.join(out, "model.safetensors")
    t = load_file(path)
    levels = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
    for name in [n for n in t if n.endswith("mlp.experts.gate_up_proj") or n.endswith("mlp.experts.down_proj")]:
        w = t[name].float().transpose(-1, -2).contiguous()  # [E, N, K]
        E, N, K = w.shape
        blocks = w.reshape(E, N, K // 32, 32)
        amax = blocks.abs().amax(-1)
        exp = torch.where(amax > 0, torch.ceil(torch.log2(amax / 6.0)), torch.zeros_like(amax)).clamp(-127, 127)
        scale = torch.pow(2.0, exp)
        x = (blocks / scale.unsqueeze(-1)).clamp(-6, 6)
        idx = (x.abs().unsqueeze(-1) - levels).abs().argmin(-1).to(torch.uint8)
        codes = idx | torch.where(x < 0, 8, 0).to(torch.uint8)
        packed = codes[..., 0::2] | (codes[..., 1::2] << 4)
        t[name + "_blocks"] = packed.contiguous()
        t[name + "_scales"] = (exp + 127).to(torch.uint8).contiguous()
    save_file(t, path, metadata={"format": "pt"})


class NoReference(Exception):
    """ONNX Runtime cannot load the file at all (bf16 on CPU): the test compares with the fp32 twin."""


def ort_reference(folder):
    import onnxruntime as ort
    with open(os.path.join(folder, "genai_config.json")) as f:
        cfg = json.load(f)
    dec = cfg["model"]["decoder"]
    # ORT 1.32 fails on the fp16 MHA exports' decode steps through their declared
    # value_info dims ("Shape mismatch attempting to re-use buffer": dim_params that
    # do not hold once past > 0): the reference session reads a copy without them.
    import onnx
    proto = onnx.load(os.path.join(folder, dec["filename"]), load_external_data=False)
    ops = {n.op_type for n in proto.graph.node}
    del proto.graph.value_info[:]
    ref_model = os.path.join(folder, "model.ref.onnx")
    onnx.save(proto, ref_model)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    try:
        sess = ort.InferenceSession(ref_model, so, providers=["CPUExecutionProvider"])
    except Exception as e:  # e.g. bf16: ORT's CPU provider lacks kernels for it
        raise NoReference(f"ONNX Runtime {ort.__version__} cannot load it: {str(e).splitlines()[0][:200]}")
    finally:
        os.remove(ref_model)
    inputs = {i.name: i for i in sess.get_inputs()}
    kv_type = {"tensor(float)": np.float32, "tensor(float16)": np.float16}
    L, Nkv, H = dec["num_hidden_layers"], dec["num_key_value_heads"], dec["head_size"]
    names_in, names_out = dec["inputs"], dec["outputs"]
    # Incremental, as a generator runs it (the prompt in one step, then one token per
    # step with the past fed back): GroupQueryAttention graphs get a zero past of the
    # generation's capacity (ORT refuses a local window above the cache capacity) and
    # return it updated; Concat graphs start from an empty past.
    cap = len(PROMPT) + STEPS if "GroupQueryAttention" in ops else 0
    past = {}
    for l in range(L):
        for kind in ("key", "value"):
            n = names_in[f"past_{kind}_names"] % l
            dt = kv_type.get(inputs[n].type)
            if dt is None:
                raise NoReference("ONNX Runtime CPU cannot feed this KV dtype from numpy")
            past[n] = np.zeros((1, Nkv, cap, H), dtype=dt)
    out_names = [o.name for o in sess.get_outputs()]
    ids = list(PROMPT)
    feed_ids = list(PROMPT)
    out_ids, margins, maxabs, first = [], [], [], None
    for step in range(STEPS):
        T = len(ids)
        feed = {names_in["input_ids"]: np.array([feed_ids], dtype=np.int64),
                names_in["attention_mask"]: np.ones((1, T), dtype=np.int64)}
        if "position_ids" in names_in:
            feed[names_in["position_ids"]] = np.arange(T - len(feed_ids), T, dtype=np.int64)[None, :]
        feed.update(past)
        res = dict(zip(out_names, sess.run(None, feed)))
        logits = res[names_out["logits"]][0, -1].astype(np.float64)
        if first is None:
            first = logits.tolist()
        order = np.argsort(-logits)
        margins.append(float(logits[order[0]] - logits[order[1]]))
        maxabs.append(float(np.max(np.abs(logits))))
        tok = int(order[0])
        out_ids.append(tok)
        for l in range(L):
            for kind in ("key", "value"):
                past[names_in[f"past_{kind}_names"] % l] = res[names_out[f"present_{kind}_names"] % l]
        ids.append(tok)
        feed_ids = [tok]
    return {"prompt": PROMPT, "ids": out_ids, "margins": margins, "max_abs_logit": maxabs,
            "first_logits": first, "onnxruntime": ort.__version__}


def run_case(name, out_dir):
    family, precision, extra = CASES[name]
    folder = os.path.join(out_dir, name)
    ref = os.path.join(folder, "ref.json")
    if os.path.exists(ref):
        return
    hf = os.path.join(out_dir, "hf", family)
    if not os.path.exists(os.path.join(hf, "config.json")):
        make_hf(family, hf)
    extra = dict(extra)
    version = extra.pop("builder", None)  # an older builder: its wheel alone, beside the venv's packages
    env = dict(os.environ)
    if version is not None:
        target = os.path.join(out_dir, "builders", version)
        if not os.path.exists(os.path.join(target, "onnxruntime_genai")):
            subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                            "--target", target, f"onnxruntime-genai=={version}"], check=True)
        env["PYTHONPATH"] = target
    cmd = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", hf, "-o", folder, "-p", precision,
           "-e", "cpu", "-c", os.path.join(out_dir, "hf_cache")]
    if extra:
        cmd += ["--extra_options"] + [f"{k}={v}" for k, v in extra.items()]
    log = os.path.join(out_dir, name + ".log")
    with open(log, "w") as f:
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env)
    if r.returncode != 0:
        with open(log) as f:
            tail = f.read().strip().splitlines()[-1:]
        raise RuntimeError(f"builder failed for {name}: {' '.join(tail)[:300]} (see {log})")
    import onnxruntime_genai
    data = {"case": name, "family": family, "precision": precision, "extra_options": extra,
            "builder": version or onnxruntime_genai.__version__}
    try:
        data.update(ort_reference(folder))
    except NoReference as e:
        data["no_reference"] = str(e)
    with open(ref + ".tmp", "w") as f:
        json.dump(data, f)
    os.replace(ref + ".tmp", ref)
    print(f"made {name}", flush=True)


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    names = sys.argv[2:] or list(CASES)
    failed = []
    for n in names:
        if n not in CASES:
            raise SystemExit(f"unknown case {n}; cases: {' '.join(CASES)}")
        try:
            run_case(n, out_dir)
        except Exception as e:  # noqa: BLE001 - report every failed case, then fail
            print(e, flush=True)
            failed.append(n)
    if failed:
        raise SystemExit(f"{len(failed)} case(s) failed: {' '.join(failed)}")


if __name__ == "__main__":
    main()
