// Writes a random-weight model in onnxruntime-genai's CPU layout (spec 3.6,
// 4.2-4.6): model.onnx + model.onnx.data, genai_config.json, tokenizer files.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "modelgen/shapes.h"

namespace nbits::modelgen {

enum class EmbeddingMode {
  kGather,  // fp32 Gather table + quantized lm_head (builders <= v0.14, untied models)
  kShared,  // Reshape + GatherBlockQuantized on the lm_head's codes (tied, builders >= v0.15)
};

struct MakeModelOptions {
  ModelShape shape;
  QuantSpec quant;
  EmbeddingMode embedding = EmbeddingMode::kGather;
  uint64_t seed = 1;
  std::string tokenizer_from;  // directory whose files are copied next to the model ("" = none)
  std::string out_dir;
  int threads = 2;
  // Called with a one-line progress message (e.g. "layer 3/24"); may be empty.
  std::function<void(const std::string&)> progress;
};

struct MakeModelResult {
  std::string onnx_path;
  int64_t data_bytes = 0;    // size of model.onnx.data
  int64_t matmul_bytes = 0;  // MatMulNBits codes + scales + zero points
};

// Throws nbits::Error naming the problem (bad shape, unwritable dir, ...).
MakeModelResult make_model(const MakeModelOptions& opt);

// The genai_config.json text for a shape (spec 4.4).
std::string genai_config_json(const ModelShape& s);

}  // namespace nbits::modelgen
