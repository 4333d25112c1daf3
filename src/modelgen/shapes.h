// Model shapes (architecture hyper-parameters) and quantization settings used by
// make-model, roofline and bench. Presets follow the Hugging Face configs of the
// three target models (spec 3.6).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nbits::modelgen {

struct ModelShape {
  std::string arch = "custom";  // preset name, or "custom"
  std::string type = "llama";   // genai_config model.type: "qwen2" | "llama"
  int64_t hidden = 0;
  int64_t layers = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_size = 64;
  int64_t intermediate = 0;
  int64_t vocab = 0;
  int64_t context = 2048;
  float rope_theta = 10000.0f;
  float rms_eps = 1e-5f;
  bool qkv_bias = false;
  bool tied = false;
  int64_t bos_token_id = 1;
  int64_t eos_token_id = 2;

  int64_t qkv_out() const { return (heads + 2 * kv_heads) * head_size; }
  int64_t q_out() const { return heads * head_size; }
  // Throws nbits::Error naming the first inconsistent field.
  void validate() const;
};

struct QuantSpec {
  int bits = 4;
  int block = 32;
  bool asym = false;
  int accuracy_level = 4;
  int scale_bytes = 4;           // 4: fp32 scales as in ONNX; 2: nbits --scales fp16
  std::string describe() const;  // "int4 b32" / "int8 b128 asym" / "int4 b32 f16s"
};

// "qwen2.5-0.5b", "smollm2-360m", "tinyllama-1.1b"; throws nbits::Error for others.
ModelShape shape_preset(const std::string& arch);
std::vector<std::string> preset_names();

}  // namespace nbits::modelgen
