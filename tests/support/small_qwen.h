// A random-weight Qwen2-shaped int4 export for tests (modelgen::make_model): hidden 128, 2 layers,
// 8 query / 2 kv heads of 16, block 32, accuracy level 4 (int8 activations), qkv bias, tied
// embedding, vocabulary 1000. Written into its own folder of the temp directory per process (ctest
// runs each test of a file as a process of its own, in parallel: a folder shared by name was
// removed by one while another read it), removed again at exit.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "modelgen/make_model.h"

namespace nbits::testing {

struct SmallQwen2 {
  std::string dir;
  SmallQwen2(const std::string& name, int64_t context, uint64_t seed);
  ~SmallQwen2() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  SmallQwen2(const SmallQwen2&) = delete;
  SmallQwen2& operator=(const SmallQwen2&) = delete;
};

inline SmallQwen2::SmallQwen2(const std::string& name, int64_t context, uint64_t seed) {
  modelgen::MakeModelOptions o;
  modelgen::ModelShape& s = o.shape;
  s.hidden = 128, s.layers = 2, s.heads = 8, s.kv_heads = 2, s.head_size = 16, s.intermediate = 256;
  s.vocab = 1000, s.context = context, s.rope_theta = 1e6f, s.rms_eps = 1e-6f, s.qkv_bias = true,
  s.tied = true;
  s.type = "qwen2";
  s.bos_token_id = 1, s.eos_token_id = 2;
  o.seed = seed;
  o.out_dir = (std::filesystem::temp_directory_path() / (name + "." + std::to_string(getpid()))).string();
  std::filesystem::remove_all(o.out_dir);
  modelgen::make_model(o);
  dir = o.out_dir;
}

}  // namespace nbits::testing
