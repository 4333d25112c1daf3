"""Exact reference for tests/gguf: a float64 numpy forward pass of a GGUF llama / qwen2 / qwen3 /
phi3 / gemma / gemma2 / gemma3 / granite / smollm3 / olmo2 / lfm2 / mistral3 / ernie4_5 / exaone / qwen2vl / qwen3vl (text) / exaone4 / stablelm / internlm2 model, or a mixture-of-experts one (qwen3moe, qwen2moe, olmoe,
granitemoe, llama with experts: softmax router, top-k by probability, ties to the lower index; gpt-oss: biased
router, top-k logits soft-maxed, biased experts with the clamped SwiGLU, attention sinks) on its weights as gguf-py dequantizes them (gguf.quants.dequantize), so it holds the
quantized model's own math without any activation rounding. Writes, for the prompts of
tools/gguf/llamacpp_logits_ref.mjs (or --prompts JSON), the first-step logits of each.
Usage: python exact_ref.py MODEL.gguf OUT.json [--prompts '[[1,2,3], ...]'] [--context N]
--context: the context the model runs with (default 128, llamacpp_logits_ref.mjs's): phi3's LongRoPE
takes its long factors when it exceeds rope.scaling.original_context_length."""
import argparse
import json

import numpy as np
import gguf

PROMPTS = [
    [504, 3575, 282, 4649, 314],
    [1604, 3987, 46477, 24, 94, 727],
    [6403, 1980, 253, 655, 28, 281, 253, 1165, 6560, 28],
    [504, 2365, 6354, 16438, 27003, 690, 260, 23790, 2767, 30, 378, 2365, 6354],
    [33, 28, 216, 34, 28, 216, 35, 28, 216, 36, 28, 216, 37, 28],
    [1, 4093, 198, 1780, 314, 260, 16891, 1225, 282, 913, 47, 2, 198, 1, 520, 9531, 198],
    [33580, 14870, 314, 260, 980, 411, 527],
    [2017, 6772, 347, 2333, 198, 104, 446, 2333, 30, 4282, 4151],
    [504, 1296, 3003, 4683, 359],
    [788, 216, 33, 41, 38, 41, 28, 27639, 24955],
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--prompts", type=json.loads, default=PROMPTS)
    ap.add_argument("--context", type=int, default=128)
    args = ap.parse_args()
    path, out, prompts = args.model, args.out, args.prompts
    r = gguf.GGUFReader(path)
    kv = {f.name: f for f in r.fields.values()}

    def val(key, default=None):
        f = kv.get(key)
        if f is None:
            return default
        v = f.parts[f.data[0]]
        return bytes(v).decode() if f.types[0] == gguf.GGUFValueType.STRING else v.item()

    arch = val("general.architecture")
    L, E = val(arch + ".block_count"), val(arch + ".embedding_length")
    nh = val(arch + ".attention.head_count")
    nkv = val(arch + ".attention.head_count_kv", nh)
    if arch + ".attention.head_count_kv" in kv and len(kv[arch + ".attention.head_count_kv"].data) > 1:
        f = kv[arch + ".attention.head_count_kv"]  # per layer (lfm2: 0 on its convolution layers)
        nkv = max(int(f.parts[i][0]) for i in f.data)
    H = val(arch + ".attention.key_length", E // nh)
    rdim = val(arch + ".rope.dimension_count", H)
    base = val(arch + ".rope.freq_base", 10000.0)
    eps = val(arch + ".attention.layer_norm_rms_epsilon", 1e-5)
    ctx = val(arch + ".context_length")
    stype = val(arch + ".rope.scaling.type")
    factor = val(arch + ".rope.scaling.factor", 1.0) if stype in ("linear", "yarn") else 1.0
    attn_factor = val(arch + ".rope.scaling.attn_factor", 1.0)
    # YaRN (llama.cpp's rope_yarn, ext_factor 1): interpolated frequencies blended back to the original
    # ones on a ramp between the correction dims; magnitude get_mscale(factor) (mistral3 divides by
    # get_mscale(factor, yarn_log_multiplier)) times attn_factor.
    yarn = stype == "yarn"
    orig_ctx = val(arch + ".rope.scaling.original_context_length", ctx)
    if yarn:
        gm = lambda s, m: 1.0 if s <= 1 else 0.1 * m * np.log(s) + 1.0
        log_mul = val(arch + ".rope.scaling.yarn_log_multiplier", 0.0) if arch == "mistral3" else 0.0
        yarn_mscale = (gm(factor, 1.0) / gm(factor, log_mul) if log_mul else gm(factor, 1.0)) * attn_factor
        corr = lambda beta: rdim * np.log(orig_ctx / (beta * 2 * np.pi)) / (2 * np.log(base))
        lo = max(0.0, np.floor(corr(val(arch + ".rope.scaling.yarn_beta_fast", 32.0))))
        hi = min(rdim - 1.0, np.ceil(corr(val(arch + ".rope.scaling.yarn_beta_slow", 1.0))))
        ramp = 1 - np.clip((np.arange(rdim // 2) - lo) / max(0.001, hi - lo), 0, 1)
    # mistral3's attention temperature on q: 1 + scale * ln(floor(pos / original context) + 1).
    temp_scale = val(arch + ".attention.temperature_scale", 0.0) if arch == "mistral3" else 0.0
    # gemma3, olmo2: every swa_period-th layer is global, the others see the last `window` keys
    # (llama.cpp's LLAMA_SWA_TYPE_STANDARD) with their own rope base (olmo2: the global one) and no
    # rope scaling. phi3's window is off in llama.cpp.
    window = val(arch + ".attention.sliding_window", 0) if arch in ("gemma3", "olmo2", "gpt-oss") else 0
    swa_period = val(arch + ".attention.sliding_window_pattern", {"gemma3": 6, "gpt-oss": 2}.get(arch, 4))
    base_swa = val(arch + ".rope.freq_base_swa", 10000.0) if arch == "gemma3" else base
    # gpt-oss (llama.cpp's openai-moe): the local layers rope as the global ones, YaRN included; attention
    # sinks, biases on o / router / experts, the FFN's pre-norm named post_attention_norm, the clamped
    # SwiGLU (alpha 1.702, limit 7) and the top-k router logits soft-maxed among themselves.
    oai = arch == "gpt-oss"
    softcap = val(arch + ".final_logit_softcapping", 0.0)
    attn_softcap = 0.0
    gemma = arch in ("gemma", "gemma2", "gemma3")  # embedding * sqrt(E), GELU gate
    pre_norms = arch not in ("olmo2", "exaone4")  # olmo2, exaone4: no norm before attention or FFN
    post_norms = arch in ("gemma2", "gemma3", "olmo2", "exaone4")  # norms of the attention / FFN outputs
    nope = 4 if arch == "smollm3" else 0  # smollm3: layer l has no rope when (l + 1) % 4 == 0
    # granite: llama with multipliers (0 or absent: none; attention.scale 0: 1/sqrt(head_dim)).
    granite = arch in ("granite", "granitemoe")
    mult = lambda k: (val(arch + "." + k, 0.0) or 1.0) if granite else 1.0
    emb_scale, res_scale, logit_scale = mult("embedding_scale"), mult("residual_scale"), mult("logit_scale")
    qscale = (val(arch + ".attention.scale", 0.0) if granite else 0.0) or 1 / np.sqrt(H)
    n_used = val(arch + ".expert_used_count", 0)
    moe_norm = arch in ("qwen3moe", "granitemoe", "llama")  # renormalised top-k weights
    if arch == "gemma2":  # llama.cpp: even layers local (window 4096 by default), one rope, q.k soft-capped
        window, swa_period, base_swa = val(arch + ".attention.sliding_window", 4096), 2, base
        softcap = val(arch + ".final_logit_softcapping", 30.0)
        attn_softcap = val(arch + ".attn_logit_softcapping", 50.0)
    T = {t.name: t for t in r.tensors}

    def w(name):  # [rows, cols] as ggml stores them: ne0 = cols
        t = T[name]
        shape = [int(x) for x in reversed(t.shape)]
        if int(t.tensor_type) == 41:  # Q1_0, which gguf-py 0.19 does not dequantize: d * (bit ? 1 : -1)
            b = np.asarray(t.data, dtype=np.uint8).reshape(-1, 18)
            d = b[:, 0:2].copy().view(np.float16).astype(np.float64)
            bits = np.unpackbits(b[:, 2:], axis=1, bitorder="little").astype(np.float64)
            return (d * (2 * bits - 1)).reshape(shape)
        return gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float64).reshape(shape)

    def rms(x, g):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * g

    # phi3 LongRoPE: llama.cpp takes the long factors when its context (--context; nbits: the KV
    # capacity, by default context_length) exceeds the original one.
    ffac = np.ones(rdim // 2)
    if "rope_factors_long.weight" in T:
        orig = val(arch + ".rope.scaling.original_context_length", ctx)
        ffac = w("rope_factors_long.weight" if args.context > orig else "rope_factors_short.weight").reshape(-1)
    elif "rope_freqs.weight" in T:  # Llama 3 rope scaling: per-frequency divisors, always
        ffac = w("rope_freqs.weight").reshape(-1)

    # qwen2vl / qwen3vl on text: the pairs whose rope.dimension_sections section is the 4th position
    # (llama.cpp gives text tokens 0 there) do not rotate; t, h and w are the token's position.
    frozen = np.zeros(rdim // 2, dtype=bool)
    if arch in ("qwen2vl", "qwen3vl"):
        f = kv[arch + ".rope.dimension_sections"]
        sec = [int(f.parts[i][0]) for i in f.data] + [0]
        tot = sum(sec[:4])
        for i in range(rdim // 2):
            s_ = i % tot
            if arch == "qwen3vl":
                frozen[i] = not ((s_ % 3 == 0 and s_ < 3 * sec[0]) or (s_ % 3 == 1 and s_ < 3 * sec[1]) or
                                 (s_ % 3 == 2 and s_ < 3 * sec[2]))
            else:
                frozen[i] = s_ >= sec[0] + sec[1] + sec[2]

    def rope(x, pos, b, scale):  # x [S, heads, H]; llama: adjacent pairs (ggml normal), others: halves (NEOX)
        half = rdim // 2
        inv = np.where(frozen, 0.0, b ** (-2.0 * np.arange(half) / rdim) / ffac)
        th, mag = pos[:, None] / scale * inv[None, :], attn_factor
        if yarn and scale != 1.0:
            extrap = pos[:, None] * inv[None, :]
            th, mag = extrap / scale * (1 - ramp) + extrap * ramp, yarn_mscale
        c, s = np.cos(th)[:, None, :] * mag, np.sin(th)[:, None, :] * mag
        y = x.copy()
        if arch in ("llama", "granite", "granitemoe", "smollm3", "mistral3", "ernie4_5", "internlm2"):
            a, b = x[..., 0:rdim:2], x[..., 1:rdim:2]
            y[..., 0:rdim:2], y[..., 1:rdim:2] = a * c - b * s, a * s + b * c
        else:
            a, b = x[..., :half], x[..., half:rdim]
            y[..., :half], y[..., half:rdim] = a * c - b * s, a * s + b * c
        return y

    emb = w("token_embd.weight")
    head = w("output.weight") if "output.weight" in T else emb
    Nq, Nkv = nh * H, nkv * H
    layers = []
    for l in range(L):
        p = "blk.%d." % l
        moe = p + "ffn_gate_inp.weight" in T
        conv = p + "shortconv.in_proj.weight" in T  # lfm2's gated short convolution instead of attention
        names = (["shortconv.in_proj", "shortconv.conv", "shortconv.out_proj"] if conv else ["attn_output"]) + \
            (["attn_norm"] + ([] if oai else ["ffn_norm"]) if pre_norms else [])
        names += ["ffn_gate_inp", "ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"] if moe else ["ffn_up", "ffn_down"]
        names += [k for k in ("ffn_gate_shexp", "ffn_up_shexp", "ffn_down_shexp", "ffn_gate_inp_shexp")
                  if p + k + ".weight" in T]
        names += [] if conv else ["attn_qkv"] if p + "attn_qkv.weight" in T else ["attn_q", "attn_k", "attn_v"]
        names += ["ffn_gate"] if p + "ffn_gate.weight" in T else []
        names += ["post_attention_norm", "post_ffw_norm"] if post_norms else []
        d = {k: w(p + k + ".weight") for k in names}
        if oai:
            d["ffn_norm"] = w(p + "post_attention_norm.weight")
            for k in ("attn_output", "ffn_gate_inp", "ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"):
                d[k + ".bias"] = w(p + k + ".bias")
            d["attn_sinks"] = w(p + "attn_sinks.weight").reshape(-1)
        if "attn_qkv" in d:
            d["attn_q"], d["attn_k"], d["attn_v"] = np.split(d.pop("attn_qkv"), [Nq, Nq + Nkv])
        if not moe and "ffn_gate" not in d:  # phi3: ffn_up holds gate then up
            d["ffn_gate"], d["ffn_up"] = np.split(d["ffn_up"], 2)
        d["swa"] = window > 0 and l % swa_period < swa_period - 1
        d["rope"] = nope == 0 or (l + 1) % nope != 0
        d["conv"] = conv
        for k in ("attn_q", "attn_k", "attn_v"):
            d[k + ".bias"] = w(p + k + ".bias") if p + k + ".bias" in T else 0.0
        for k in ("attn_q_norm", "attn_k_norm"):
            d[k] = w(p + k + ".weight") if p + k + ".weight" in T else None
        layers.append(d)
    norm = w("token_embd_norm.weight" if arch == "lfm2" else "output_norm.weight")
    # stablelm: LayerNorms with biases (attention.layer_norm_epsilon) before attention, FFN and output.
    ln = arch == "stablelm"
    if ln:
        eps_ln = val(arch + ".attention.layer_norm_epsilon", 1e-5)
        norm_b = w("output_norm.bias")
        for l, d in enumerate(layers):
            for k in ("attn_norm", "ffn_norm"):
                d[k + ".bias"] = w("blk.%d.%s.bias" % (l, k))

    def layer_norm(x, g, b):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(v + eps_ln) * g + b

    def pre_norm(x, d, k):
        return layer_norm(x, d[k], d[k + ".bias"]) if ln else rms(x, d[k])

    def silu_ffn(h, g, u, dn):
        a = h @ g.T
        return (a / (1 + np.exp(-a)) * (h @ u.T)) @ dn.T

    def oai_ffn(h, d, e):  # gpt-oss's expert e: biased projections, clamped SwiGLU
        g = np.minimum(h @ d["ffn_gate_exps"][e].T + d["ffn_gate_exps.bias"][e], 7.0)
        u = np.clip(h @ d["ffn_up_exps"][e].T + d["ffn_up_exps.bias"][e], -7.0, 7.0)
        return (g / (1 + np.exp(-1.702 * g)) * (u + 1)) @ d["ffn_down_exps"][e].T + d["ffn_down_exps.bias"][e]

    def experts(h, d):  # the routed experts (+ the shared one)
        lg = h @ d["ffn_gate_inp"].T + d.get("ffn_gate_inp.bias", 0.0)
        pr = np.exp(lg - lg.max(-1, keepdims=True))
        pr /= pr.sum(-1, keepdims=True)
        f = np.zeros_like(h)
        for s in range(h.shape[0]):
            top = np.argsort(-pr[s], kind="stable")[:n_used]
            wt = pr[s, top] / (pr[s, top].sum() if moe_norm or oai else 1.0)  # oai: softmax of the top-k
            for j, e in enumerate(top):
                if oai:
                    f[s] += wt[j] * oai_ffn(h[s], d, e)
                    continue
                f[s] += wt[j] * silu_ffn(h[s], d["ffn_gate_exps"][e], d["ffn_up_exps"][e], d["ffn_down_exps"][e])
        if "ffn_up_shexp" in d:
            sh = silu_ffn(h, d["ffn_gate_shexp"], d["ffn_up_shexp"], d["ffn_down_shexp"])
            if "ffn_gate_inp_shexp" in d:
                sh = sh / (1 + np.exp(-(h @ d["ffn_gate_inp_shexp"].reshape(-1))))[:, None]
            f += sh
        return f

    def attend(h, d, mask, pos):  # self-attention of one layer
        S = h.shape[0]
        q = h @ d["attn_q"].T + d["attn_q.bias"]
        k = h @ d["attn_k"].T + d["attn_k.bias"]
        full_norm = d["attn_q_norm"] is not None and d["attn_q_norm"].size == Nq != H  # olmoe
        if full_norm:
            q, k = rms(q, d["attn_q_norm"].reshape(-1)), rms(k, d["attn_k_norm"].reshape(-1))
        q, k = q.reshape(S, nh, H), k.reshape(S, nkv, H)
        v = (h @ d["attn_v"].T + d["attn_v.bias"]).reshape(S, nkv, H)
        if d["attn_q_norm"] is not None and not full_norm:
            q, k = rms(q, d["attn_q_norm"]), rms(k, d["attn_k_norm"])
        b, scale = (base_swa, factor if oai else 1.0) if d["swa"] else (base, factor)
        if d["rope"]:
            q, k = rope(q, pos, b, scale), rope(k, pos, b, scale)
        if temp_scale:
            q = q * (np.log(np.floor(pos / orig_ctx) + 1) * temp_scale + 1)[:, None, None]
        rep = nh // nkv
        k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
        sc = np.einsum("shd,thd->hst", q, k) * qscale
        if attn_softcap:
            sc = attn_softcap * np.tanh(sc / attn_softcap)
        sc = sc + mask
        if oai:  # a sink logit per head: an extra exp(sink) in each softmax denominator
            sk = np.broadcast_to(d["attn_sinks"][:, None, None], sc.shape[:2] + (1,))
            mx = np.maximum(sc.max(-1, keepdims=True), sk)
            sc = np.exp(sc - mx)
            sc /= sc.sum(-1, keepdims=True) + np.exp(sk - mx)
        else:
            sc = np.exp(sc - sc.max(-1, keepdims=True))
            sc /= sc.sum(-1, keepdims=True)
        return np.einsum("hst,thd->shd", sc, v).reshape(S, nh * H) @ d["attn_output"].T + d.get("attn_output.bias", 0.0)

    def short_conv(h, d):  # lfm2: c * conv(b * x), causal, depthwise, taps oldest first, zeros before the start
        b_, c_, x_ = np.split(h @ d["shortconv.in_proj"].T, 3, axis=-1)
        taps = d["shortconv.conv"]  # [E, taps]
        bx = np.concatenate([np.zeros((taps.shape[1] - 1, E)), b_ * x_])
        co = sum(bx[j:j + h.shape[0]] * taps[:, j] for j in range(taps.shape[1]))
        return (c_ * co) @ d["shortconv.out_proj"].T

    res = []
    for ids in prompts:
        S = len(ids)
        pos = np.arange(S, dtype=np.float64)
        x = emb[ids] * (np.sqrt(np.float32(E)) if gemma else 1.0) * emb_scale
        causal = np.triu(np.full((S, S), -np.inf), 1)
        local = causal + np.tril(np.full((S, S), -np.inf), -window) if window > 0 else causal
        for d in layers:
            mask = local if d["swa"] else causal
            h = pre_norm(x, d, "attn_norm") if pre_norms else x
            att = short_conv(h, d) if d["conv"] else attend(h, d, mask, pos)
            x = x + (rms(att, d["post_attention_norm"]) if post_norms else att) * res_scale
            h = pre_norm(x, d, "ffn_norm") if pre_norms else x
            if "ffn_gate_inp" in d:
                x = x + experts(h, d) * res_scale
                continue
            g = h @ d["ffn_gate"].T
            if gemma:  # GELU, tanh approximation (ggml_gelu)
                act = 0.5 * g * (1 + np.tanh(np.sqrt(2 / np.pi) * (g + 0.044715 * g ** 3)))
            else:
                act = g / (1 + np.exp(-g))
            f = (act * (h @ d["ffn_up"].T)) @ d["ffn_down"].T
            x = x + (rms(f, d["post_ffw_norm"]) if post_norms else f) * res_scale
        logits = (layer_norm(x[-1], norm, norm_b) if ln else rms(x[-1], norm)) @ head.T / logit_scale
        if softcap:
            logits = softcap * np.tanh(logits / softcap)
        res.append({"prompt_ids": ids, "logits": [round(float(z), 6) for z in logits]})
    json.dump({"reference": "float64 numpy forward on gguf-py dequantized weights", "arch": arch, "cases": res},
              open(out, "w"))


main()
