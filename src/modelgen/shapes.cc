#include "modelgen/shapes.h"

#include "base/error.h"

namespace nbits::modelgen {

void ModelShape::validate() const {
  NBITS_CHECK(hidden > 0 && layers > 0 && heads > 0 && kv_heads > 0 && intermediate > 0 && vocab > 0,
              "model shape '", arch,
              "': hidden, layers, heads, kv-heads, intermediate and vocab must be > 0");
  NBITS_CHECK(head_size > 0 && head_size % 16 == 0, "model shape '", arch, "': head-size ", head_size,
              " must be a positive multiple of 16 (GroupQueryAttention with rotary)");
  NBITS_CHECK(heads % kv_heads == 0, "model shape '", arch, "': heads ", heads,
              " not a multiple of kv-heads ", kv_heads);
  NBITS_CHECK(context > 0, "model shape '", arch, "': context must be > 0");
  NBITS_CHECK(rope_theta > 0 && rms_eps > 0, "model shape '", arch, "': rope-theta and rms-eps must be > 0");
}

std::string QuantSpec::describe() const {
  std::string s = "int" + std::to_string(bits) + " b" + std::to_string(block);
  if (asym) s += " asym";
  if (scale_bytes == 2) s += " f16s";
  return s;
}

ModelShape shape_preset(const std::string& arch) {
  ModelShape s;
  s.arch = arch;
  if (arch == "qwen2.5-0.5b") {
    s.type = "qwen2";
    s.hidden = 896, s.layers = 24, s.heads = 14, s.kv_heads = 2, s.intermediate = 4864, s.vocab = 151936;
    s.context = 32768, s.rope_theta = 1e6f, s.rms_eps = 1e-6f, s.qkv_bias = true, s.tied = true;
    s.bos_token_id = 151643, s.eos_token_id = 151643;
  } else if (arch == "smollm2-360m") {
    s.type = "llama";
    s.hidden = 960, s.layers = 32, s.heads = 15, s.kv_heads = 5, s.intermediate = 2560, s.vocab = 49152;
    s.context = 8192, s.rope_theta = 1e5f, s.rms_eps = 1e-5f, s.qkv_bias = false, s.tied = true;
    s.bos_token_id = 1, s.eos_token_id = 2;
  } else if (arch == "tinyllama-1.1b") {
    s.type = "llama";
    s.hidden = 2048, s.layers = 22, s.heads = 32, s.kv_heads = 4, s.intermediate = 5632, s.vocab = 32000;
    s.context = 2048, s.rope_theta = 1e4f, s.rms_eps = 1e-5f, s.qkv_bias = false, s.tied = false;
    s.bos_token_id = 1, s.eos_token_id = 2;
  } else {
    fail("unknown model architecture '", arch,
         "' (expected qwen2.5-0.5b, smollm2-360m, tinyllama-1.1b or custom)");
  }
  s.head_size = 64;
  return s;
}

std::vector<std::string> preset_names() { return {"qwen2.5-0.5b", "smollm2-360m", "tinyllama-1.1b"}; }

}  // namespace nbits::modelgen
