"""Tiny random GGUF models for tests/gguf, one per architecture nbits synthesises, with the
SmolLM2 vocabulary (copied from the real GGUF, so llama.cpp loads them and the SmolLM2 prompt
ids of tools/gguf/llamacpp_logits_ref.mjs apply) and every quantization type nbits maps:
  tiny_llama.gguf  q Q4_0, k Q4_1, v Q8_0 (three matmuls), o Q4_K, gate Q5_K, up Q6_K, down Q4_0,
                   untied output Q6_K, embedding Q4_K (min term: dequantized once)
  tiny_qwen2.gguf  q/k/v Q5_K + F32 biases, the rest Q4_K, tied Q8_0 embedding
  tiny_qwen3.gguf  q/k/v Q6_K + per-head q/k RMS norms, o/gate/up Q8_0, down F16, tied F16 embedding
  tiny_phi3.gguf   fused attn_qkv Q8_0, o Q4_K, fused gate+up ffn_up Q4_0, down Q6_K, untied Q8_0 output,
                   LongRoPE (rope_factors_long/short, original context 64 of 256, attn_factor 1.1)
  tiny_gemma3.gguf 6 layers (5 sliding-window layers of 8 keys, then a global one), q/k norms,
                   post-attention/post-FFN norms, GELU gate, rope base 1e6 global / 1e4 local, linear
                   rope scaling 2 on the global layer, final logit softcap 2, q/k/v Q8_0, the rest Q4_0
  tiny_quants.gguf llama, 2 layers, every other type nbits maps, one per matrix: layer 0 q Q5_0,
                   k Q5_1, v IQ4_NL, o IQ4_XS, gate Q2_K, up Q3_K, down TQ2_0; layer 1 q TQ1_0,
                   k MXFP4, v Q5_0, o Q5_1, gate IQ4_XS, up IQ4_NL, down Q3_K; embedding Q5_0 (as
                   in llama.cpp's Q4_K_M of small models), untied output Q2_K
  tiny_iquants.gguf llama, 2 layers, ggml's lattice types (each twice): layer 0 q IQ2_XXS, k IQ2_XS,
                   v IQ2_S, o IQ3_XXS, gate IQ3_S, up IQ1_S, down IQ1_M; layer 1 q IQ1_M, k IQ1_S,
                   v IQ3_S, o IQ2_XS, gate IQ2_XXS, up IQ3_XXS, down IQ2_S; embedding IQ2_S, output IQ3_S
Hidden 256 (K-quant rows are multiples of 256), 4 heads of 64, 2 KV heads, FFN 512, 2 layers.
  tiny_q1.gguf     llama with every layer matrix Q1_0 (a sign bit per weight, one fp16 d per 128: the
                   Bonsai files' type), untied Q6_K output; llama.cpp 3.21.1 has no Q1_0: exact math only
  tiny_llama3.gguf llama with Llama 3.2's rope scaling (rope_freqs.weight: rope base 5e5, factor 32,
                   bands 1 / 4 of an original context of 64), K-quants, untied Q6_K output
  tiny_yarn.gguf   qwen3 with YaRN rope scaling (factor 4, original context 64, betas 32 / 1)
  tiny_mistral3.gguf mistral3: llama's graph, YaRN (factor 4, original context 8, betas 2 / 0.05, log
                   multiplier 1) and the attention temperature 0.1 (q times 1 + 0.1 ln(floor(pos / 8) + 1))
  tiny_ernie4_5.gguf ERNIE 4.5: llama's graph (adjacent pairs) with q/k/v biases, tied Q8_0 embedding
  tiny_exaone.gguf EXAONE 3.5: llama's graph with halves (NEOX) rope, Llama 3 rope_freqs (base 1e6),
                   q/k/v biases, untied Q6_K output
  tiny_qwen2vl.gguf Qwen2-VL / 2.5-VL's text model (rope base 100, so that the slowest pairs turn within the
                   prompts): qwen2 with M-RoPE sections 8 / 12 / 10 / 2 (the last
                   2 pairs take the 4th position: 0 for text in llama.cpp, so they do not rotate)
  tiny_qwen3vl.gguf Qwen3-VL's text model: qwen3 with interleaved sections 12 / 10 / 10 / 0 (pair 31
                   falls outside them: the 4th position, no rotation)
  tiny_exaone4.gguf EXAONE 4 (1.2B's layout): olmo2's norms after attention and FFN only, per-head q/k
                   norms, halves (NEOX) rope with Llama 3 rope_freqs, untied Q6_K output
  tiny_stablelm.gguf StableLM 2 (1.6B's layout): LayerNorms with biases, q/k/v biases, a quarter of each
                   head rotated (halves), untied Q6_K output
  tiny_internlm2.gguf InternLM2 / 2.5: llama's graph (adjacent pairs), K-quants, untied Q6_K output
  tiny_gemma2.gguf 4 layers (even ones local, window 8), attention logit softcap 0.5 (small, so it
                   bites), final softcap 2, post-attention/post-FFN norms, GELU gate, q/k/v Q5_0,
                   o Q4_K, gate IQ4_NL, up Q4_0, down Q8_0, tied Q8_0 embedding
  tiny_granite.gguf llama with granite's multipliers: embedding 12, residual 0.22, attention 0.05 (not
                   1/sqrt(64)), logits divided by 8; q/k/v Q8_0, o Q5_1, gate/up Q4_K, down Q6_K,
                   untied Q5_0 output
  tiny_gemma.gguf  Gemma 1: embedding * sqrt(n_embd), GELU gate, no post norms, one KV head (as the
                   2B), tied Q8_0 embedding; q/k/v Q4_1, o Q5_K, gate Q6_K, up IQ4_XS, down Q5_0
  tiny_smollm3.gguf 4 layers, the 4th without rope (NoPE), adjacent-pair rope; q/k/v Q4_K, o Q8_0,
                   gate/up Q5_0, down Q4_K, tied Q8_0 embedding
  tiny_lfm2.gguf   LFM2: layers conv, conv, attention, conv (head_count_kv 0 marks a gated short
                   convolution of 3 taps: in_proj Q4_K, F32 taps, out_proj Q5_0), per-head q/k norms,
                   final norm token_embd_norm, tied Q8_0 embedding; q/k/v Q8_0, o Q4_1, FFN Q4_0 / Q6_K
  tiny_olmo2.gguf  OLMo 2 / 3: no norms before attention or FFN, RMS norms after both, q/k normed over
                   all heads, 4 layers with OLMo 3's sliding windows (8 keys, pattern 4, rope base
                   5e5 on all); q/k/v Q8_0, o Q4_0, gate/up Q4_K, down Q6_K, untied Q5_1
Mixture-of-experts models (8 experts of FFN 256, F32 routers; each made alone, its own stream):
  tiny_qwen3moe.gguf   qwen3 attention (per-head q/k norms), top-3 renormalised, gate/up Q4_K, down Q6_K
  tiny_qwen2moe.gguf   qwen2 attention (q/k/v biases), top-2 not renormalised, experts Q5_0 / Q8_0, a
                       shared expert (FFN 384, Q8_0) scaled by sigmoid(x . ffn_gate_inp_shexp)
  tiny_olmoe.gguf      q/k RMS-normed over all heads (4 KV heads: llama.cpp's olmoe sizes the k norm
                       by n_embd), top-2 not renormalised, experts Q4_0, untied output
  tiny_mixtral.gguf    llama with expert tensors (Mixtral), top-2 renormalised, experts Q4_K / Q5_K
  tiny_granitemoe.gguf granite's multipliers, top-2 renormalised, experts IQ4_NL / Q8_0
  tiny_gpt-oss.gguf    gpt-oss: MXFP4 experts with biases (gate/up large enough that the clamped
                       SwiGLU's limit 7 bites), a router bias, top-2 soft-maxed among themselves,
                       q/k/v/o biases, a sink logit per head, layer 0 local (window 4), YaRN
                       (factor 4, original context 64) on both layers, untied Q6_K output
Usage: python make_tiny_models.py SMOLLM2.gguf OUTDIR
       [quants|iquants|q1|llama3|ernie4_5|exaone|qwen2vl|qwen3vl|exaone4|stablelm|internlm2|yarn|mistral3|gemma2|granite|gemma|smollm3|olmo2|lfm2|qwen3moe|qwen2moe|olmoe|mixtral|granitemoe|gpt-oss]   (one model only; the models
after the first five have their own random streams, so each is the same file either way)"""
import os
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf.constants import GGML_QUANT_SIZES

src, out = sys.argv[1], sys.argv[2]
only = sys.argv[3] if len(sys.argv) > 3 else None
os.makedirs(out, exist_ok=True)
r = gguf.GGUFReader(src)
tok_fields = [f for f in r.fields.values() if f.name.startswith("tokenizer.")]
V = len(r.fields["tokenizer.ggml.tokens"].data)
E, NH, NKV, HD, FF, L = 256, 4, 2, 64, 512, 2
rng = np.random.default_rng(1234)


# Types gguf-py cannot quantize: random blocks, their fp16 scale fields set as below.
RANDOM_BLOCKS = (T.Q1_0, T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K, T.IQ4_NL, T.IQ4_XS, T.IQ2_XXS, T.IQ2_XS, T.IQ2_S,
                 T.IQ3_XXS, T.IQ3_S, T.IQ1_S, T.IQ1_M)


def kquant(rows, cols, t):
    """Random blocks of a type in RANDOM_BLOCKS with scales that keep values about N(0, 0.05)."""
    block, size = GGML_QUANT_SIZES[t]
    b = rng.integers(0, 256, size=(rows * cols // block, size), dtype=np.uint8)
    half = lambda x: np.asarray(x, dtype=np.float16).view(np.uint8).reshape(-1, 2)
    n = b.shape[0]
    scale = lambda s: np.abs(rng.standard_normal(n)) * s + s / 10
    if t == T.Q2_K:  # d*sc*q - dmin*m, sc and m in 0..15, q in 0..3
        b[:, 80:82], b[:, 82:84] = half(scale(1.5e-3)), half(scale(1.5e-3))
    elif t == T.Q3_K:  # d*(sc-32)*q, q in -4..3
        b[:, 108:110] = half(scale(4e-4))
    elif t == T.IQ4_NL:  # d*level, |level| <= 127
        b[:, 0:2] = half(scale(4e-4))
    elif t == T.IQ4_XS:  # d*(sc-32)*level
        b[:, 0:2] = half(scale(1.5e-5))
    elif t == T.Q1_0:  # d * (bit ? 1 : -1)
        b[:, 0:2] = half(scale(0.05))
    elif t in (T.IQ2_XXS, T.IQ2_XS, T.IQ2_S):  # d*(0.5+s)/4 * +-lattice (8, 25, 43)
        b[:, 0:2] = half(scale(1.2e-3))
    elif t == T.IQ3_XXS:  # d*(0.5+s)/2 * +-lattice (4 .. 62)
        b[:, 0:2] = half(scale(5e-4))
    elif t == T.IQ3_S:  # d*(1+2s) * +-lattice (1 .. 15)
        b[:, 0:2] = half(scale(4e-4))
    elif t == T.IQ1_S:  # d*(1+2s) * (lattice (-1, 0, 1) +- 1/8)
        b[:, 0:2] = half(scale(9e-3))
    elif t == T.IQ1_M:  # the same, its fp16 d in the top nibbles of the four scale words (bytes 48..55)
        d = half(scale(9e-3)).copy().view(np.uint16).reshape(-1)
        for i in range(4):
            b[:, 49 + 2 * i] = (b[:, 49 + 2 * i] & 0x0F) | (((d >> (4 * i)) & 0xF) << 4).astype(np.uint8)
    elif t in (T.Q4_K, T.Q5_K):
        b[:, 0:2] = half(np.abs(rng.standard_normal(n)) * (2e-4 if t == T.Q4_K else 1e-4) + 1e-5)
        b[:, 2:4] = half(np.abs(rng.standard_normal(n)) * (2e-4 if t == T.Q4_K else 2e-4))
    else:  # Q6_K
        b[:, 208:210] = half(np.abs(rng.standard_normal(n)) * 1.5e-5 + 1e-6)
    return b.reshape(rows, cols // block * size)


def weight(w, name, rows, cols, t, scale=1.0):
    if t in RANDOM_BLOCKS:
        assert scale == 1.0
        w.add_tensor(name, kquant(rows, cols, t), raw_dtype=t)
        return
    x = (rng.standard_normal((rows, cols)) * 0.05 * scale).astype(np.float32)
    if t == T.F32:
        w.add_tensor(name, x)
    elif t == T.F16:
        w.add_tensor(name, x.astype(np.float16))
    else:
        w.add_tensor(name, gguf.quants.quantize(x, t), raw_dtype=t)


def norm(w, name, n):
    w.add_tensor(name, (1 + 0.1 * rng.standard_normal(n)).astype(np.float32))


def model(arch, types, biases=False, qk_norm=False, output=None, embd=T.Q8_0, file=None, extra=None, layers=L,
          out_scale=lambda l: 1.0, rope_base=None):
    """types: one dict of matrix types for every layer, or a list with one dict per layer; extra:
    a function adding metadata; out_scale(l): a factor on layer l's attn_output and ffn_down."""
    w = gguf.GGUFWriter(os.path.join(out, "tiny_%s.gguf" % (file or arch)), arch)
    header(w, arch, layers)
    if extra:
        extra(w)
    w.add_rope_freq_base(rope_base or (10000.0 if arch == "llama" else 1000000.0))
    weight(w, "token_embd.weight", V, E, embd)
    norm(w, "output_norm.weight", E)
    if output is not None:
        weight(w, "output.weight", V, E, output)
    for l in range(layers):
        p = "blk.%d." % l
        norm(w, p + "attn_norm.weight", E)
        norm(w, p + "ffn_norm.weight", E)
        for name, rows, cols in (("attn_q", NH * HD, E), ("attn_k", NKV * HD, E), ("attn_v", NKV * HD, E),
                                 ("attn_output", E, NH * HD), ("ffn_gate", FF, E), ("ffn_up", FF, E),
                                 ("ffn_down", E, FF)):
            weight(w, p + name + ".weight", rows, cols, (types[l] if isinstance(types, list) else types)[name],
                   out_scale(l) if name in ("attn_output", "ffn_down") else 1.0)
            if biases and name in ("attn_q", "attn_k", "attn_v"):
                w.add_tensor(p + name + ".bias", (0.1 * rng.standard_normal(rows)).astype(np.float32))
        if qk_norm:
            norm(w, p + "attn_q_norm.weight", HD)
            norm(w, p + "attn_k_norm.weight", HD)
    finish(w)


def header(w, arch, layers=L, context=256, ff=FF, nkv=NKV):
    w.add_block_count(layers)
    w.add_context_length(context)
    w.add_embedding_length(E)
    w.add_feed_forward_length(ff)
    w.add_head_count(NH)
    w.add_head_count_kv(nkv)
    w.add_key_length(HD)
    w.add_value_length(HD)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_vocab_size(V)
    copy_tokenizer(w)


def copy_tokenizer(w):
    for f in tok_fields:
        vt = f.types[0]
        if vt == gguf.GGUFValueType.ARRAY:
            et = f.types[-1]
            vals = [bytes(f.parts[i]).decode("utf-8", "surrogateescape") if et == gguf.GGUFValueType.STRING
                    else f.parts[i].item() for i in f.data]
            w.add_key_value(f.name, vals, vt, sub_type=et)
        else:
            v = f.parts[f.data[0]]
            w.add_key_value(f.name, bytes(v).decode() if vt == gguf.GGUFValueType.STRING else v.item(), vt)


def finish(w):
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def phi3():
    w = gguf.GGUFWriter(os.path.join(out, "tiny_phi3.gguf"), "phi3")
    header(w, "phi3")
    w.add_rope_freq_base(10000.0)
    w.add_rope_dimension_count(HD)
    w.add_uint32("phi3.rope.scaling.original_context_length", 64)
    w.add_float32("phi3.rope.scaling.attn_factor", 1.1)
    w.add_uint32("phi3.attention.sliding_window", 0)
    w.add_tensor("rope_factors_long.weight", (1 + 3 * rng.random(HD // 2)).astype(np.float32))
    w.add_tensor("rope_factors_short.weight", (1 + 0.5 * rng.random(HD // 2)).astype(np.float32))
    weight(w, "token_embd.weight", V, E, T.Q4_0)
    norm(w, "output_norm.weight", E)
    weight(w, "output.weight", V, E, T.Q8_0)
    for l in range(L):
        p = "blk.%d." % l
        norm(w, p + "attn_norm.weight", E)
        norm(w, p + "ffn_norm.weight", E)
        weight(w, p + "attn_qkv.weight", NH * HD + 2 * NKV * HD, E, T.Q8_0)
        weight(w, p + "attn_output.weight", E, NH * HD, T.Q4_K)
        weight(w, p + "ffn_up.weight", 2 * FF, E, T.Q4_0)
        weight(w, p + "ffn_down.weight", E, FF, T.Q6_K)
    finish(w)


def gemma(arch, layers, meta, types, qk_norm, norms=("attn_norm", "post_attention_norm", "ffn_norm", "post_ffw_norm"),
          nkv=NKV, output=None):
    """A Gemma-family model (and OLMo 2, by its norms): `meta` adds the arch's keys, `types` the matrix
    types (attn_q, attn_k, attn_v, attn_output, ffn_gate, ffn_up, ffn_down); qk_norm None, "head" or
    "full" (over all heads)."""
    w = gguf.GGUFWriter(os.path.join(out, "tiny_%s.gguf" % arch), arch)
    header(w, arch, layers, nkv=nkv)
    meta(w)
    weight(w, "token_embd.weight", V, E, T.Q8_0)
    norm(w, "output_norm.weight", E)
    if output is not None:
        weight(w, "output.weight", V, E, output)
    for l in range(layers):
        p = "blk.%d." % l
        for n in norms:
            norm(w, p + n + ".weight", E)
        if qk_norm:
            norm(w, p + "attn_q_norm.weight", HD if qk_norm == "head" else NH * HD)
            norm(w, p + "attn_k_norm.weight", HD if qk_norm == "head" else nkv * HD)
        for (name, rows, cols), t in zip((("attn_q", NH * HD, E), ("attn_k", nkv * HD, E), ("attn_v", nkv * HD, E),
                                          ("attn_output", E, NH * HD), ("ffn_gate", FF, E), ("ffn_up", FF, E),
                                          ("ffn_down", E, FF)), types):
            weight(w, p + name + ".weight", rows, cols, t)
    finish(w)


def gemma3():
    def meta(w):
        w.add_rope_freq_base(1000000.0)
        w.add_string("gemma3.rope.scaling.type", "linear")
        w.add_float32("gemma3.rope.scaling.factor", 2.0)
        w.add_uint32("gemma3.attention.sliding_window", 8)
        w.add_float32("gemma3.final_logit_softcapping", 2.0)
    gemma("gemma3", 6, meta, (T.Q8_0, T.Q8_0, T.Q8_0, T.Q4_0, T.Q4_0, T.Q4_0, T.Q4_0), qk_norm="head")


def gemma2():
    def meta(w):
        w.add_rope_freq_base(10000.0)
        w.add_uint32("gemma2.attention.sliding_window", 8)
        w.add_float32("gemma2.attn_logit_softcapping", 0.5)
        w.add_float32("gemma2.final_logit_softcapping", 2.0)
    gemma("gemma2", 4, meta, (T.Q5_0, T.Q5_0, T.Q5_0, T.Q4_K, T.IQ4_NL, T.Q4_0, T.Q8_0), qk_norm=None)

if only is None:
    model("llama", dict(attn_q=T.Q4_0, attn_k=T.Q4_1, attn_v=T.Q8_0, attn_output=T.Q4_K, ffn_gate=T.Q5_K,
                        ffn_up=T.Q6_K, ffn_down=T.Q4_0), output=T.Q6_K, embd=T.Q4_K)
    model("qwen2", dict(attn_q=T.Q5_K, attn_k=T.Q5_K, attn_v=T.Q5_K, attn_output=T.Q4_K, ffn_gate=T.Q4_K,
                        ffn_up=T.Q4_K, ffn_down=T.Q4_K), biases=True)
    model("qwen3", dict(attn_q=T.Q6_K, attn_k=T.Q6_K, attn_v=T.Q6_K, attn_output=T.Q8_0, ffn_gate=T.Q8_0,
                        ffn_up=T.Q8_0, ffn_down=T.F16), qk_norm=True, embd=T.F16)
    phi3()
    gemma3()
rng = np.random.default_rng(4321)
if only in (None, "quants"):
    model("llama", [dict(attn_q=T.Q5_0, attn_k=T.Q5_1, attn_v=T.IQ4_NL, attn_output=T.IQ4_XS, ffn_gate=T.Q2_K,
                         ffn_up=T.Q3_K, ffn_down=T.TQ2_0),
                    dict(attn_q=T.TQ1_0, attn_k=T.MXFP4, attn_v=T.Q5_0, attn_output=T.Q5_1, ffn_gate=T.IQ4_XS,
                         ffn_up=T.IQ4_NL, ffn_down=T.Q3_K)], output=T.Q2_K, embd=T.Q5_0, file="quants")
rng = np.random.default_rng(97531)
if only in (None, "iquants"):
    model("llama", [dict(attn_q=T.IQ2_XXS, attn_k=T.IQ2_XS, attn_v=T.IQ2_S, attn_output=T.IQ3_XXS, ffn_gate=T.IQ3_S,
                         ffn_up=T.IQ1_S, ffn_down=T.IQ1_M),
                    dict(attn_q=T.IQ1_M, attn_k=T.IQ1_S, attn_v=T.IQ3_S, attn_output=T.IQ2_XS, ffn_gate=T.IQ2_XXS,
                         ffn_up=T.IQ3_XXS, ffn_down=T.IQ2_S)], output=T.IQ3_S, embd=T.IQ2_S, file="iquants")


def llama3_rope_freqs(w, base=500000.0, factor=32.0, low=1.0, high=4.0, orig=64):
    """rope_freqs.weight as convert_hf_to_gguf.py writes Llama 3.2's rope scaling (its base 5e5 and
    factor 32; original context 64 here, so the three bands fall within a 64-wide head)."""
    out = []
    for f in base ** (-np.arange(0, HD, 2) / HD):
        wl = 2 * np.pi / f
        if wl < orig / high:
            out.append(1.0)
        elif wl > orig / low:
            out.append(factor)
        else:
            smooth = (orig / wl - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    w.add_tensor("rope_freqs.weight", np.asarray(out, dtype=np.float32))


def yarn_keys(arch, factor, orig, beta_fast=None, beta_slow=None, log_mul=None):
    def add(w):
        w.add_string(arch + ".rope.scaling.type", "yarn")
        w.add_float32(arch + ".rope.scaling.factor", factor)
        w.add_uint32(arch + ".rope.scaling.original_context_length", orig)
        if beta_fast is not None:
            w.add_float32(arch + ".rope.scaling.yarn_beta_fast", beta_fast)
            w.add_float32(arch + ".rope.scaling.yarn_beta_slow", beta_slow)
        if log_mul is not None:
            w.add_float32(arch + ".rope.scaling.yarn_log_multiplier", log_mul)
    return add


rng = np.random.default_rng(13579)
if only in (None, "q1"):
    model("llama", dict(attn_q=T.Q1_0, attn_k=T.Q1_0, attn_v=T.Q1_0, attn_output=T.Q1_0, ffn_gate=T.Q1_0,
                        ffn_up=T.Q1_0, ffn_down=T.Q1_0), output=T.Q6_K, file="q1")
rng = np.random.default_rng(11111)
if only in (None, "llama3"):
    model("llama", dict(attn_q=T.Q4_K, attn_k=T.Q4_K, attn_v=T.Q6_K, attn_output=T.Q4_K, ffn_gate=T.Q4_K,
                        ffn_up=T.Q4_K, ffn_down=T.Q6_K), output=T.Q6_K, file="llama3", extra=llama3_rope_freqs,
          rope_base=500000.0)
rng = np.random.default_rng(75319)
if only in (None, "yarn"):
    model("qwen3", dict(attn_q=T.Q8_0, attn_k=T.Q8_0, attn_v=T.Q8_0, attn_output=T.Q4_K, ffn_gate=T.Q4_K,
                        ffn_up=T.Q4_K, ffn_down=T.Q6_K), qk_norm=True, file="yarn", extra=yarn_keys("qwen3", 4.0, 64))


def mistral3_keys(w):
    yarn_keys("mistral3", 4.0, 8, beta_fast=2.0, beta_slow=0.05, log_mul=1.0)(w)
    w.add_float32("mistral3.attention.temperature_scale", 0.1)


rng = np.random.default_rng(33333)
if only in (None, "mistral3"):
    model("mistral3", dict(attn_q=T.Q4_K, attn_k=T.Q4_K, attn_v=T.Q4_K, attn_output=T.Q5_K, ffn_gate=T.Q4_K,
                           ffn_up=T.Q4_K, ffn_down=T.Q6_K), output=T.Q6_K, file="mistral3", extra=mistral3_keys)
rng = np.random.default_rng(24680)
if only in (None, "ernie4_5"):
    model("ernie4_5", dict(attn_q=T.Q8_0, attn_k=T.Q8_0, attn_v=T.Q8_0, attn_output=T.Q4_K, ffn_gate=T.Q4_K,
                           ffn_up=T.Q4_K, ffn_down=T.Q6_K), biases=True)


rng = np.random.default_rng(35791)
if only in (None, "exaone"):
    model("exaone", dict(attn_q=T.Q4_K, attn_k=T.Q4_K, attn_v=T.Q6_K, attn_output=T.Q4_K, ffn_gate=T.Q4_K,
                         ffn_up=T.Q4_K, ffn_down=T.Q6_K), biases=True, output=T.Q6_K,
          extra=lambda w: llama3_rope_freqs(w, base=1000000.0))
rng = np.random.default_rng(46802)
if only in (None, "qwen2vl"):
    model("qwen2vl", dict(attn_q=T.Q8_0, attn_k=T.Q8_0, attn_v=T.Q8_0, attn_output=T.Q4_K, ffn_gate=T.Q4_K,
                          ffn_up=T.Q4_K, ffn_down=T.Q6_K), biases=True,
          extra=lambda w: w.add_array("qwen2vl.rope.dimension_sections", [8, 12, 10, 2]), rope_base=100.0)
rng = np.random.default_rng(57913)
if only in (None, "qwen3vl"):
    model("qwen3vl", dict(attn_q=T.Q6_K, attn_k=T.Q6_K, attn_v=T.Q6_K, attn_output=T.Q8_0, ffn_gate=T.Q4_K,
                          ffn_up=T.Q4_K, ffn_down=T.Q6_K), qk_norm=True,
          extra=lambda w: w.add_array("qwen3vl.rope.dimension_sections", [12, 10, 10, 0]), rope_base=100.0)
rng = np.random.default_rng(2468)
if only in (None, "gemma2"):
    gemma2()
rng = np.random.default_rng(1357)
def granite_moe_scales(w):
    w.add_float32("granitemoe.embedding_scale", 12.0)
    w.add_float32("granitemoe.residual_scale", 0.22)
    w.add_float32("granitemoe.attention.scale", 0.05)
    w.add_float32("granitemoe.logit_scale", 8.0)


if only in (None, "granite"):
    def granite_scales(w):
        w.add_float32("granite.embedding_scale", 12.0)
        w.add_float32("granite.residual_scale", 0.22)
        w.add_float32("granite.attention.scale", 0.05)
        w.add_float32("granite.logit_scale", 8.0)
    model("granite", dict(attn_q=T.Q8_0, attn_k=T.Q8_0, attn_v=T.Q8_0, attn_output=T.Q5_1, ffn_gate=T.Q4_K,
                          ffn_up=T.Q4_K, ffn_down=T.Q6_K), output=T.Q5_0, extra=granite_scales)

rng = np.random.default_rng(8642)
if only in (None, "gemma"):
    gemma("gemma", 2, lambda w: w.add_rope_freq_base(10000.0), (T.Q4_1, T.Q4_1, T.Q4_1, T.Q5_K, T.Q6_K, T.IQ4_XS, T.Q5_0),
          qk_norm=None, norms=("attn_norm", "ffn_norm"), nkv=1)
rng = np.random.default_rng(7531)
if only in (None, "smollm3"):
    # Layers 0-2 write little to the residual (outputs x0.1), so the NoPE layer 3 dominates the
    # logits: four full random layers amplify the int8 noise past the rope's own effect.
    model("smollm3", dict(attn_q=T.Q4_K, attn_k=T.Q4_K, attn_v=T.Q4_K, attn_output=T.Q8_0, ffn_gate=T.Q5_0,
                          ffn_up=T.Q5_0, ffn_down=T.Q5_1), layers=4, out_scale=lambda l: 0.1 if l < 3 else 1.0)
rng = np.random.default_rng(6420)
if only in (None, "olmo2"):
    def olmo_meta(w):
        w.add_rope_freq_base(500000.0)
        w.add_uint32("olmo2.attention.sliding_window", 8)
        w.add_uint32("olmo2.attention.sliding_window_pattern", 4)
    gemma("olmo2", 4, olmo_meta, (T.Q8_0, T.Q8_0, T.Q8_0, T.Q4_0, T.Q4_K, T.Q4_K, T.Q6_K), qk_norm="full",
          norms=("post_attention_norm", "post_ffw_norm"), output=T.Q5_1)

rng = np.random.default_rng(13680)
if only in (None, "internlm2"):
    model("internlm2", dict(attn_q=T.Q4_K, attn_k=T.Q4_K, attn_v=T.Q6_K, attn_output=T.Q4_K, ffn_gate=T.Q4_K,
                            ffn_up=T.Q4_K, ffn_down=T.Q6_K), output=T.Q6_K, rope_base=1000000.0)

rng = np.random.default_rng(80246)
if only in (None, "stablelm"):
    def stablelm_extra(w):
        w.add_float32("stablelm.attention.layer_norm_epsilon", 1e-5)
        w.add_uint32("stablelm.rope.dimension_count", HD // 4)  # StableLM 2: 25% of each head rotates
        w.add_tensor("output_norm.bias", (0.1 * rng.standard_normal(E)).astype(np.float32))
        for l in range(L):
            for k in ("attn_norm", "ffn_norm"):
                w.add_tensor("blk.%d.%s.bias" % (l, k), (0.1 * rng.standard_normal(E)).astype(np.float32))
    model("stablelm", dict(attn_q=T.Q8_0, attn_k=T.Q8_0, attn_v=T.Q8_0, attn_output=T.Q4_K, ffn_gate=T.Q4_K,
                           ffn_up=T.Q4_K, ffn_down=T.Q6_K), biases=True, output=T.Q6_K, extra=stablelm_extra,
          rope_base=10000.0)

rng = np.random.default_rng(68024)
if only in (None, "exaone4"):
    def exaone4_meta(w):
        w.add_rope_freq_base(1000000.0)
        llama3_rope_freqs(w, base=1000000.0)
    gemma("exaone4", 2, exaone4_meta, (T.Q4_K, T.Q4_K, T.Q6_K, T.Q4_K, T.Q4_K, T.Q4_K, T.Q6_K), qk_norm="head",
          norms=("post_attention_norm", "post_ffw_norm"), output=T.Q6_K)

rng = np.random.default_rng(5319)
if only in (None, "lfm2"):
    kinds = ("conv", "conv", "attn", "conv")
    w = gguf.GGUFWriter(os.path.join(out, "tiny_lfm2.gguf"), "lfm2")
    header(w, "lfm2", len(kinds), nkv=[0 if k == "conv" else NKV for k in kinds])
    w.add_uint32("lfm2.shortconv.l_cache", 3)
    w.add_rope_freq_base(1000000.0)
    weight(w, "token_embd.weight", V, E, T.Q8_0)
    norm(w, "token_embd_norm.weight", E)
    for l, kind in enumerate(kinds):
        p = "blk.%d." % l
        norm(w, p + "attn_norm.weight", E)
        norm(w, p + "ffn_norm.weight", E)
        if kind == "conv":
            weight(w, p + "shortconv.in_proj.weight", 3 * E, E, T.Q4_K)
            w.add_tensor(p + "shortconv.conv.weight", (0.3 * rng.standard_normal((E, 3))).astype(np.float32))
            weight(w, p + "shortconv.out_proj.weight", E, E, T.Q5_0)
        else:
            norm(w, p + "attn_q_norm.weight", HD)
            norm(w, p + "attn_k_norm.weight", HD)
            for name, rows, cols, t in (("attn_q", NH * HD, E, T.Q8_0), ("attn_k", NKV * HD, E, T.Q8_0),
                                        ("attn_v", NKV * HD, E, T.Q8_0), ("attn_output", E, NH * HD, T.Q4_1)):
                weight(w, p + name + ".weight", rows, cols, t)
        weight(w, p + "ffn_gate.weight", FF, E, T.Q4_0)
        weight(w, p + "ffn_up.weight", FF, E, T.Q4_0)
        weight(w, p + "ffn_down.weight", E, FF, T.Q6_K)
    finish(w)


def experts(w, name, n, rows, cols, t, scale=0.05):
    """n experts' [rows, cols] matrices as one [n, rows, cols] tensor (ggml: ne = [cols, rows, n])."""
    if t in RANDOM_BLOCKS:
        w.add_tensor(name, kquant(n * rows, cols, t).reshape(n, rows, -1), raw_dtype=t)
        return
    x = (rng.standard_normal((n, rows, cols)) * scale).astype(np.float32)
    w.add_tensor(name, gguf.quants.quantize(x, t), raw_dtype=t)


def moe(arch, file, used, gate_up, down, attn=T.Q8_0, qk_norm=None, biases=False, shared=0, output=None,
        extra=None, n_exp=8, ffe=256, nkv=NKV):
    """qk_norm: None, "head" (per head, qwen3) or "full" (over all heads, olmoe)."""
    w = gguf.GGUFWriter(os.path.join(out, "tiny_%s.gguf" % file), arch)
    header(w, arch, ff=ffe, nkv=nkv)  # olmoe, granitemoe and Mixtral size their experts by feed_forward_length
    w.add_expert_count(n_exp)
    w.add_expert_used_count(used)
    w.add_expert_feed_forward_length(ffe)
    if shared:
        w.add_expert_shared_feed_forward_length(shared)
    if extra:
        extra(w)
    w.add_rope_freq_base(10000.0 if arch in ("llama", "granitemoe") else 1000000.0)
    weight(w, "token_embd.weight", V, E, T.Q8_0)
    norm(w, "output_norm.weight", E)
    if output is not None:
        weight(w, "output.weight", V, E, output)
    for l in range(L):
        p = "blk.%d." % l
        norm(w, p + "attn_norm.weight", E)
        norm(w, p + "ffn_norm.weight", E)
        for name, rows, cols in (("attn_q", NH * HD, E), ("attn_k", nkv * HD, E), ("attn_v", nkv * HD, E),
                                 ("attn_output", E, NH * HD)):
            weight(w, p + name + ".weight", rows, cols, attn)
            if biases and name != "attn_output":
                w.add_tensor(p + name + ".bias", (0.1 * rng.standard_normal(rows)).astype(np.float32))
        if qk_norm:
            norm(w, p + "attn_q_norm.weight", HD if qk_norm == "head" else NH * HD)
            norm(w, p + "attn_k_norm.weight", HD if qk_norm == "head" else nkv * HD)
        # Router logits of about N(0, 2.4): peaked enough that the chosen experts are not near-ties.
        w.add_tensor(p + "ffn_gate_inp.weight", (0.15 * rng.standard_normal((n_exp, E))).astype(np.float32))
        experts(w, p + "ffn_gate_exps.weight", n_exp, ffe, E, gate_up)
        experts(w, p + "ffn_up_exps.weight", n_exp, ffe, E, gate_up)
        experts(w, p + "ffn_down_exps.weight", n_exp, E, ffe, down)
        if shared:
            if arch == "qwen2moe":
                w.add_tensor(p + "ffn_gate_inp_shexp.weight", (0.1 * rng.standard_normal(E)).astype(np.float32))
            weight(w, p + "ffn_gate_shexp.weight", shared, E, T.Q8_0)
            weight(w, p + "ffn_up_shexp.weight", shared, E, T.Q8_0)
            weight(w, p + "ffn_down_shexp.weight", E, shared, T.Q8_0)
    finish(w)


for i, (name, make) in enumerate((
        ("qwen3moe", lambda: moe("qwen3moe", "qwen3moe", 3, T.Q4_K, T.Q6_K, qk_norm="head")),
        ("qwen2moe", lambda: moe("qwen2moe", "qwen2moe", 2, T.Q5_0, T.Q8_0, biases=True, shared=384, output=T.Q8_0)),
        ("olmoe", lambda: moe("olmoe", "olmoe", 2, T.Q4_0, T.Q4_0, qk_norm="full", output=T.Q8_0, nkv=NH)),
        ("mixtral", lambda: moe("llama", "mixtral", 2, T.Q4_K, T.Q5_K, output=T.Q6_K)),
        ("granitemoe", lambda: moe("granitemoe", "granitemoe", 2, T.IQ4_NL, T.Q8_0, extra=granite_moe_scales)))):
    rng = np.random.default_rng(9000 + i)
    if only == name:
        make()


def gpt_oss(n_exp=8, used=2, ffe=256):
    w = gguf.GGUFWriter(os.path.join(out, "tiny_gpt-oss.gguf"), "gpt-oss")
    header(w, "gpt-oss", ff=ffe)
    w.add_expert_count(n_exp)
    w.add_expert_used_count(used)
    w.add_expert_feed_forward_length(ffe)
    w.add_sliding_window(4)
    yarn_keys("gpt-oss", 4.0, 64)(w)
    w.add_rope_freq_base(150000.0)
    weight(w, "token_embd.weight", V, E, T.Q8_0)
    norm(w, "output_norm.weight", E)
    weight(w, "output.weight", V, E, T.Q6_K)
    for l in range(L):
        p = "blk.%d." % l
        norm(w, p + "attn_norm.weight", E)
        norm(w, p + "post_attention_norm.weight", E)
        for name, rows, cols in (("attn_q", NH * HD, E), ("attn_k", NKV * HD, E), ("attn_v", NKV * HD, E),
                                 ("attn_output", E, NH * HD)):
            weight(w, p + name + ".weight", rows, cols, T.Q8_0)
            w.add_tensor(p + name + ".bias", (0.1 * rng.standard_normal(rows)).astype(np.float32))
        # Sink logits on the scores' scale: some heads give much of their weight to the sink.
        w.add_tensor(p + "attn_sinks.weight", (1.5 * rng.standard_normal(NH)).astype(np.float32))
        w.add_tensor(p + "ffn_gate_inp.weight", (0.15 * rng.standard_normal((n_exp, E))).astype(np.float32))
        w.add_tensor(p + "ffn_gate_inp.bias", (0.5 * rng.standard_normal(n_exp)).astype(np.float32))
        # gate/up of about N(0, 6) (the limit 7 clamps some), a small down to keep the residual in scale.
        for name, rows, cols, sc in (("ffn_gate_exps", ffe, E, 0.4), ("ffn_up_exps", ffe, E, 0.4),
                                     ("ffn_down_exps", E, ffe, 0.004)):
            experts(w, p + name + ".weight", n_exp, rows, cols, T.MXFP4, sc)
            w.add_tensor(p + name + ".bias", (0.3 * rng.standard_normal((n_exp, rows))).astype(np.float32))
    finish(w)


rng = np.random.default_rng(9100)
if only in (None, "gpt-oss"):
    gpt_oss()
