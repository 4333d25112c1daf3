#include "gguf/model_builder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>

#include "base/error.h"
#include "gguf/gguf_bytes.h"
#include "gguf/gguf_test_data.h"

namespace nbits::gguf {
namespace {

std::string error_of(test::GgufBytes g) {
  try {
    build_model(File::parse(g.b, "m.gguf"));
  } catch (const Error& e) {
    return e.what();
  }
  return "(built)";
}

TEST(GgufModelBuilder, OtherArchitecturesRefusedByName) {
  test::GgufBytes g = test::small_gguf();
  g.b[g.at.at("value:general.architecture") + 8] = 'm';  // "llama" -> "mlama"
  EXPECT_EQ(error_of(g),
            "m.gguf: architecture 'mlama' is not supported (supported: llama, qwen2, qwen3, phi3, gemma2, "
            "gemma3, granite, qwen2moe, qwen3moe, olmoe, granitemoe)");
}

TEST(GgufModelBuilder, MissingHyperparameterNamed) {
  EXPECT_EQ(error_of(test::small_gguf()), "m.gguf: missing metadata key 'llama.block_count'");
}

TEST(GgufModelBuilder, UnsupportedTensorTypesListedTogether) {
  test::GgufBytes g = test::small_gguf();
  // F32 -> I32 (16 elements in the same 64 bytes): an integer tensor is no weight nbits runs. (Every
  // quant type whose block fits the small file's tensors is mapped now; the IQ1/IQ2/IQ3 lattices
  // need 256 elements: GgufQuantMap.OtherTypesRefusedByName.)
  g.patch<uint32_t>("ggml_type:a", 26);
  const File f = File::parse(g.b, "m.gguf");
  EXPECT_EQ(unsupported_tensors(f), (std::vector<std::string>{"a: I32"}));
  g = test::small_gguf();
  EXPECT_TRUE(unsupported_tensors(File::parse(g.b, "m.gguf")).empty());
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string build_error(const std::vector<uint8_t>& b) {
  try {
    build_model(File::parse(b, "m.gguf"));
  } catch (const Error& e) {
    return e.what();
  }
  return "(built)";
}

// A tiny model with one 4-byte metadata value of GGUF type `type` (4: uint32, 6: float32)
// replaced: GGUF metadata is u64 key length, the key, u32 value type, the value.
template <typename T>
std::string with_value(const std::string& path, const std::string& key, uint32_t want_type, T v) {
  std::vector<uint8_t> b = read_file(path);
  auto it = std::search(b.begin(), b.end(), key.begin(), key.end());
  if (it == b.end()) return "(key not found)";
  const size_t at = static_cast<size_t>(it - b.begin()) + key.size();
  uint32_t type;
  std::memcpy(&type, b.data() + at, 4);
  if (type != want_type) return "(another type)";
  std::memcpy(b.data() + at + 4, &v, 4);
  return build_error(b);
}

// A tiny model with dimension `d` of tensor `name` set to `v` (tensor info: u64 name length, the
// name, u32 n_dims, u64 ne[n_dims], ...).
std::string with_dim(const std::string& path, const std::string& name, int d, uint64_t v) {
  std::vector<uint8_t> b = read_file(path);
  auto it = std::search(b.begin(), b.end(), name.begin(), name.end());
  if (it == b.end()) return "(tensor not found)";
  std::memcpy(b.data() + (it - b.begin()) + name.size() + 4 + 8 * d, &v, 8);
  return build_error(b);
}

// The tiny gemma2 / granite files with one float32 metadata value changed: a bad softcap or
// multiplier is refused with one line naming the key.
std::string with_float(const std::string& path, const std::string& key, float v) {
  std::vector<uint8_t> b = read_file(path);
  // GGUF metadata: u64 key length, the key, u32 value type (6: float32), the value.
  const std::string needle = key;
  auto it = std::search(b.begin(), b.end(), needle.begin(), needle.end());
  if (it == b.end()) return "(key not found)";
  const size_t at = static_cast<size_t>(it - b.begin()) + key.size();
  uint32_t type;
  std::memcpy(&type, b.data() + at, 4);
  if (type != 6) return "(not float32)";
  std::memcpy(b.data() + at + 4, &v, 4);
  try {
    build_model(File::parse(b, "m.gguf"));
  } catch (const Error& e) {
    return e.what();
  }
  return "(built)";
}

TEST(GgufModelBuilder, BadSoftcapsAndMultipliersRefusedByName) {
  const std::string gemma2 = test::tiny_model("gemma2"), granite = test::tiny_model("granite");
  NBITS_REQUIRE_SHARED(gemma2);
  NBITS_REQUIRE_SHARED(granite);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(with_float(gemma2, "gemma2.attn_logit_softcapping", -1.0f),
            "m.gguf: gemma2.attn_logit_softcapping and final_logit_softcapping must not be negative");
  EXPECT_EQ(with_float(gemma2, "gemma2.final_logit_softcapping", nan),
            "m.gguf: gemma2.attn_logit_softcapping and final_logit_softcapping must not be negative");
  EXPECT_EQ(with_float(granite, "granite.residual_scale", -0.5f),
            "m.gguf: granite.residual_scale must be a finite non-negative number");
  EXPECT_EQ(with_float(granite, "granite.logit_scale", std::numeric_limits<float>::infinity()),
            "m.gguf: granite.logit_scale must be a finite non-negative number");
  EXPECT_EQ(with_float(granite, "granite.attention.scale", nan),
            "m.gguf: granite.attention.scale must be a finite non-negative number");
  EXPECT_EQ(with_float(granite, "granite.embedding_scale", 12.0f), "(built)");  // unchanged: loads
}

// Mixture-of-experts files whose expert counts and tensors disagree: one line each.
TEST(GgufModelBuilder, BadExpertCountsAndTensorsRefusedByName) {
  const std::string m = test::tiny_model("qwen3moe"), mixtral = test::tiny_model("mixtral");
  NBITS_REQUIRE_SHARED(m);
  NBITS_REQUIRE_SHARED(mixtral);
  EXPECT_EQ(with_value<uint32_t>(m, "qwen3moe.expert_used_count", 4, 9),
            "m.gguf: qwen3moe.expert_used_count 9 must be in [1, expert_count 8]");
  EXPECT_EQ(with_value<uint32_t>(m, "qwen3moe.expert_used_count", 4, 0),
            "m.gguf: qwen3moe.expert_used_count 0 must be in [1, expert_count 8]");
  EXPECT_EQ(with_value<uint32_t>(m, "qwen3moe.expert_count", 4, 0),
            "m.gguf: qwen3moe.expert_count 0 must be in [1, 4096]");
  EXPECT_EQ(with_value<uint32_t>(m, "qwen3moe.expert_count", 4, 6),
            "m.gguf: tensor 'blk.0.ffn_gate_exps.weight' has shape [256, 256, 8], expected [256, 256, 6]");
  EXPECT_EQ(with_dim(m, "blk.0.ffn_gate_inp.weight", 1, 4),
            "m.gguf: tensor 'blk.0.ffn_gate_inp.weight' has shape [256, 4], expected [256, 8]");
  EXPECT_EQ(with_dim(m, "blk.1.ffn_down_exps.weight", 2, 4),
            "m.gguf: tensor 'blk.1.ffn_down_exps.weight' has shape [256, 256, 4], expected [256, 256, 8]");
  EXPECT_EQ(with_dim(m, "blk.1.ffn_down_exps.weight", 0, 128),
            "m.gguf: tensor 'blk.1.ffn_down_exps.weight' (Q6_K) has a first dimension 128 that is not a "
            "multiple of its block size 256");
  // Mixtral is llama with expert_count > 0: a count of 0 makes it a dense llama without ffn_gate.
  EXPECT_EQ(with_value<uint32_t>(mixtral, "llama.expert_count", 4, 0),
            "m.gguf: missing tensor 'blk.0.ffn_gate.weight'");
  EXPECT_EQ(with_value<uint32_t>(m, "qwen3moe.expert_count", 4, 8), "(built)");  // unchanged: loads
}

TEST(GgufModelBuilder, GgufPaths) {
  EXPECT_TRUE(is_gguf_path("a/model.gguf"));
  EXPECT_FALSE(is_gguf_path("a/model.onnx"));
  EXPECT_FALSE(is_gguf_path("gguf"));
}

}  // namespace
}  // namespace nbits::gguf
