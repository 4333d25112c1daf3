// A random-weight Qwen2-shaped int4 export for tests (modelgen::make_model): hidden 128, 2 layers,
// 8 query / 2 kv heads of 16, block 32, accuracy level 4 (int8 activations), qkv bias, tied
// embedding, vocabulary 1000. Written once per (name) into the temp directory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "modelgen/make_model.h"

namespace nbits::testing {

inline std::string make_small_qwen2(const std::string& name, int64_t context, uint64_t seed) {
  modelgen::MakeModelOptions o;
  modelgen::ModelShape& s = o.shape;
  s.hidden = 128, s.layers = 2, s.heads = 8, s.kv_heads = 2, s.head_size = 16, s.intermediate = 256;
  s.vocab = 1000, s.context = context, s.rope_theta = 1e6f, s.rms_eps = 1e-6f, s.qkv_bias = true,
  s.tied = true;
  s.type = "qwen2";
  s.bos_token_id = 1, s.eos_token_id = 2;
  o.seed = seed;
  o.out_dir = (std::filesystem::temp_directory_path() / name).string();
  std::filesystem::remove_all(o.out_dir);
  modelgen::make_model(o);
  return o.out_dir;
}

}  // namespace nbits::testing
