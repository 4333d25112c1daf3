// Hugging Face Optimum / transformers.js (onnx-community) model folders:
//   config.json, generation_config.json, tokenizer files, onnx/model*.onnx
// read into the same GenaiConfig an onnxruntime-genai folder gives, so the
// Generator, the CLI and the API run both layouts alike.
#pragma once

#include <string>
#include <vector>

#include "llm/genai_config.h"

namespace nbits::llm {

// The decoder files of an Optimum folder, by variant, in the order nbits
// prefers them when none is asked for (int4 first: what nbits is fastest at).
struct OptimumVariant {
  const char* name;  // --variant value
  const char* file;  // under onnx/
};
const std::vector<OptimumVariant>& optimum_variants();

// DIR/config.json exists and DIR/genai_config.json does not.
bool is_optimum_folder(const std::string& dir);

// The decoder file of DIR for `variant` ("" = the first present in
// optimum_variants() order), relative to DIR (e.g. "onnx/model_q4.onnx").
// Throws naming the variants present when the one asked for is missing.
std::string find_optimum_decoder(const std::string& dir, const std::string& variant);

// config.json (+ generation_config.json when present) as a GenaiConfig whose
// decoder is `decoder_file` (relative to DIR). Throws nbits::Error naming the
// file and field for missing or ill-typed values.
GenaiConfig parse_hf_config(const std::string& config_json, const std::string& generation_json,
                            const std::string& config_path);
GenaiConfig load_hf_config(const std::string& dir, const std::string& decoder_file);

// The model config of PATH, whichever layout it is:
//   a genai folder (genai_config.json), or a file inside one;
//   an Optimum folder (config.json + onnx/*.onnx; `variant` picks the file);
//   an .onnx file inside an Optimum folder (DIR/onnx/x.onnx or DIR/x.onnx).
// A folder that is neither gets one line saying what is missing.
GenaiConfig load_model_config(const std::string& path, const std::string& variant = "");

}  // namespace nbits::llm
