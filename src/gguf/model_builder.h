// A GGUF file as a model nbits runs: its metadata and tensors turned into an
// in-memory onnx::Model in the onnxruntime-genai builder's int4 GQA layout
// (MatMulNBits with packed QKV, GroupQueryAttention with fused rotary,
// SkipSimplifiedLayerNormalization, SwiGLU) plus the matching GenaiConfig.
// Weights map without loss (gguf/quant_map.h); F32 tensors view the mapping.
// Architectures: llama, qwen2, qwen3, phi3 (fused qkv and gate+up, LongRoPE), gemma/gemma2/gemma3
// (sliding-window layers, extra norms, GELU gate, softcaps), granite (multipliers), smollm3 (NoPE
// layers), olmo2 (norms after attention and FFN only, q/k norms over all heads), lfm2 (gated
// short convolutions between attention layers, nbits.internal ShortConv) and the
// mixture-of-experts qwen3moe, qwen2moe, olmoe, granitemoe, Mixtral-style llama and gpt-oss
// (nbits.internal MixtureOfExperts, ops/moe.cc; gpt-oss's attention sinks through
// GroupQueryAttention's head_sink), as llama.cpp computes them; anything else is refused by name.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "graph/session.h"
#include "llm/genai_config.h"
#include "llm/generator.h"
#include "onnx/model.h"

namespace nbits::gguf {

struct Hyperparams {
  std::string arch;
  int64_t n_layer = 0, n_embd = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0;
  int64_t n_vocab = 0, context_length = 0;
  int64_t rope_dim = 0;
  double rope_base = 10000.0, rope_linear_factor = 1.0, rms_eps = 1e-5;
  bool rope_interleaved = false;  // rotate adjacent pairs (llama.cpp's "normal" rope, arch llama)
  bool qkv_bias = false, qk_norm = false, tied_output = false;
  bool fused_gate_up = false;  // phi3: ffn_up holds the gate rows, then the up rows
  // gemma/gemma2/gemma3: embedding * sqrt(n_embd), GELU gate.
  bool gemma = false;
  // RMS norms before attention and before the FFN (every architecture but olmo2), and of the
  // attention and FFN outputs before their residual adds (gemma2, gemma3, olmo2).
  bool pre_norms = true, post_norms = false;
  // LayerNorms with biases (x - mean, then weight and bias; rms_eps holds their epsilon) instead of
  // RMS norms (stablelm).
  bool layer_norm = false;
  // smollm3's NoPE layers: layer l has no rope when (l + 1) % nope_period == 0 (0: rope everywhere).
  int64_t nope_period = 0;
  // lfm2: the layers whose attention.head_count_kv entry is 0 are gated short convolutions of
  // conv_taps taps (shortconv.l_cache) instead of attention; the final norm is token_embd_norm.
  std::vector<bool> conv_layer;
  int64_t conv_taps = 0;
  std::string output_norm = "output_norm.weight";
  double attn_scale = 0.0;  // scale of q.k (llama.cpp's f_attention_scale; 1/sqrt(head_dim) by default)
  // Sliding-window layers (gemma2 / gemma3): layer l sees the last swa_window keys when
  // l % swa_period < swa_period - 1, with rope base rope_base_swa and no rope scaling.
  int64_t swa_window = 0, swa_period = 0;
  double rope_base_swa = 10000.0;
  bool swa_rope_scaled = false;  // gpt-oss: the local layers' rope scaled (YaRN) as the global ones'
  double final_softcap = 0.0;    // > 0: logits = c * tanh(logits / c)
  double attn_softcap = 0.0;     // > 0: q.k scores = c * tanh(scores / c) (gemma2)
  // granite's multipliers (1: none): the embedding, each block's attention and FFN output before
  // its residual add, and the logits (divided by logit_scale).
  double embedding_scale = 1.0, residual_scale = 1.0, logit_scale = 1.0;
  // Mixture of experts (qwen3moe, qwen2moe, olmoe, granitemoe, llama with expert tensors): every
  // layer's FFN is n_expert experts of which the router picks n_expert_used per token;
  // moe_normalize: their weights renormalised to sum 1 (qwen3moe, granitemoe, Mixtral), not
  // (qwen2moe, olmoe); qwen2moe adds a shared expert with a sigmoid gate, granitemoe one without.
  int64_t n_expert = 0, n_expert_used = 0;
  bool moe_normalize = false;
  // gpt-oss: the router's top-k logits soft-maxed among themselves, biases on the router and every
  // expert projection, the clamped SwiGLU (alpha 1.702, limit 7: llama.cpp's constants).
  bool moe_oai = false;
  // gpt-oss: a bias on the attention output, a sink logit per head (attn_sinks), and the FFN's
  // pre-norm named post_attention_norm.
  bool o_bias = false, attn_sinks = false;
  std::string ffn_norm = "ffn_norm.weight";
  bool qk_norm_full = false;      // olmoe, olmo2: q and k RMS-normed over all heads at once
  double rope_attn_factor = 1.0;  // cos/sin scale (rope.scaling.attn_factor; LongRoPE's magnitude fix)
  // LongRoPE (phi3 128k): per-frequency divisors rope_factors_long/short.weight; llama.cpp takes
  // the long ones when the context exceeds rope.scaling.original_context_length.
  bool rope_factors = false;
  int64_t rope_orig_context = 0;
  // Llama 3 rope scaling: per-frequency divisors in rope_freqs.weight, always applied (llama, granite,
  // mistral3).
  bool rope_freqs = false;
  // YaRN (rope.scaling.type yarn; llama.cpp's rope_yarn): frequencies interpolated by 1 / the factor
  // (rope_linear_factor) and blended back toward the original ones on a ramp over the rotary pairs
  // between the correction dims of beta_fast and beta_slow at rope_orig_context, weighted by
  // yarn_ext_factor; cos/sin times yarn_mscale (llama.cpp's attn_factor after its YaRN magnitude).
  bool yarn = false;
  double yarn_ext_factor = 0.0, yarn_beta_fast = 32.0, yarn_beta_slow = 1.0, yarn_mscale = 1.0;
  // Llama 4 / mistral3 attention temperature: q at position p times
  // 1 + attn_temp_scale * ln(floor((p + attn_temp_offset) / attn_temp_floor) + 1) (0: off).
  // qwen2vl / qwen3vl (multimodal rope), run on text: the rotary pairs whose section takes the 4th
  // ("extra") position, which llama.cpp sets to 0 for text tokens, do not rotate.
  std::vector<bool> rope_frozen_pairs;
  double attn_temp_scale = 0.0, attn_temp_offset = 0.0;
  int64_t attn_temp_floor = 0;
};

// Reads and checks the hyperparameters. Throws "<file>: ..." for an unsupported
// architecture, rope scaling or a missing key.
Hyperparams read_hyperparams(const File& f);

// Tensors whose type nbits cannot run, one line each: "blk.0.attn_q.weight: IQ2_XS".
std::vector<std::string> unsupported_tensors(const File& f);

struct GgufModel {
  onnx::Model model;
  llm::GenaiConfig config;
  Hyperparams hp;
};

// Builds the model; `f` moves into it (its mapping or bytes back the weights).
// accuracy_level: MatMulNBits' default (4 = int8 activations, like llama.cpp).
// capacity: the KV capacity the model will run with (0 = the context length): the rows of the
// rope tables, and LongRoPE's long/short choice (long when capacity > the original context,
// as llama.cpp decides by its context size).
GgufModel build_model(File&& f, int accuracy_level = 4, int64_t capacity = 0);

// Opens `path`, builds the model and its session, and binds a Generator (KV capacity
// max_length, 0 = the context length), as llm::Generator::load does for a folder.
std::unique_ptr<llm::Generator> load_generator(const std::string& path,
                                               const graph::SessionOptions& options = {},
                                               int64_t max_length = 0);

// True for a path ending in ".gguf" (what the CLI loads through build_model).
bool is_gguf_path(const std::string& path);

// Bytes a decode step reads from the weights as the file stores them (what llama.cpp streams):
// every tensor of two or more dimensions but the token embedding, which a step gathers one row
// of (unless the output is tied to it: then it is the lm_head and counted); of the 3-D expert
// tensors of a mixture-of-experts file, the expert_used_count / expert_count a token chooses.
int64_t file_bytes_per_token(const File& f);

}  // namespace nbits::gguf
