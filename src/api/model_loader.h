// Opening what a user names as a model: an onnxruntime-genai folder (or a file
// inside one), a Hugging Face Optimum folder or a .gguf file, into the config, the loaded session and the
// tokenizer. Used by the public API (api.cc) and by the CLI.
#pragma once

#include <memory>
#include <string>

#include "graph/session.h"
#include "llm/genai_config.h"
#include "tokenizer/tokenizer.h"

namespace nbits::api {

struct LoadedModel {
  llm::GenaiConfig config;
  std::unique_ptr<graph::Session> session;
  std::unique_ptr<Tokenizer> tokenizer;  // null when there is none and none was needed
};

// PATH: a folder with genai_config.json or a file inside one; a Hugging Face Optimum /
// transformers.js folder (config.json, onnx/model*.onnx; `variant` picks the decoder:
// q4, q4f16, int8, fp16, fp32, ...; "" = the first present of llm::optimum_variants())
// or a decoder .onnx inside one; or a .gguf file.
// need_tokenizer: throw when the model has no tokenizer (else leave it null).
LoadedModel load_model(const std::string& path, const graph::SessionOptions& options, bool need_tokenizer,
                       const std::string& variant = "");

}  // namespace nbits::api
