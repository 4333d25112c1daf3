// A GGUF file as a model nbits runs: its metadata and tensors turned into an
// in-memory onnx::Model in the onnxruntime-genai builder's int4 GQA layout
// (MatMulNBits with packed QKV, GroupQueryAttention with fused rotary,
// SkipSimplifiedLayerNormalization, SwiGLU) plus the matching GenaiConfig.
// Weights map without loss (gguf/quant_map.h); F32 tensors view the mapping.
// Architectures: llama, qwen2, qwen3; anything else is refused by name.
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
GgufModel build_model(File&& f, int accuracy_level = 4);

// Opens `path`, builds the model and its session, and binds a Generator (KV capacity
// max_length, 0 = the context length), as llm::Generator::load does for a folder.
std::unique_ptr<llm::Generator> load_generator(const std::string& path,
                                               const graph::SessionOptions& options = {},
                                               int64_t max_length = 0);

// True for a path ending in ".gguf" (what the CLI loads through build_model).
bool is_gguf_path(const std::string& path);

}  // namespace nbits::gguf
