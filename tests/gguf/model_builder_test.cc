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
            "m.gguf: architecture 'mlama' is not supported (supported: llama, qwen2, qwen3, phi3, gemma, "
            "gemma2, gemma3, granite, smollm3, olmo2, lfm2, qwen2moe, qwen3moe, olmoe, granitemoe, mistral3, "
            "ernie4_5, exaone, qwen2vl, qwen3vl, exaone4, stablelm, internlm2, gpt-oss)");
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

// The graphs of the architectures that differ from llama in where they norm and rope: smollm3's
// every 4th layer without rope, olmo2's norms after attention and FFN only (q/k over all heads)
// with OLMo 3's sliding windows, gemma's without post norms. (Their numbers: llama_cpp_agreement_test.)
const onnx::Node* node_named(const onnx::Model& m, const std::string& name) {
  for (const onnx::Node& n : m.graph.nodes)
    if (n.name == name) return &n;
  return nullptr;
}

TEST(GgufModelBuilder, NormAndRopePlacementOfSmolLM3Olmo2AndGemma) {
  const std::string smol = test::tiny_model("smollm3"), olmo = test::tiny_model("olmo2"),
                    gemma = test::tiny_model("gemma");
  NBITS_REQUIRE_SHARED(smol);
  NBITS_REQUIRE_SHARED(olmo);
  NBITS_REQUIRE_SHARED(gemma);
  const auto gqa = [](const onnx::Model& m, int l) {
    const onnx::Node* n = node_named(m, "/model/layers." + std::to_string(l) + "/attn/GroupQueryAttention");
    EXPECT_NE(n, nullptr) << l;
    return n;
  };
  {
    const GgufModel g = build_model(File::open(smol));
    EXPECT_EQ(g.hp.nope_period, 4);
    EXPECT_TRUE(g.hp.rope_interleaved);
    for (int l = 0; l < 4; ++l) {
      const onnx::Node* n = gqa(g.model, l);
      EXPECT_EQ(n->attr_int("do_rotary", -1), l == 3 ? 0 : 1) << l;
      EXPECT_EQ(n->has_input(7), l != 3) << l;  // no cos/sin caches on the NoPE layer
    }
  }
  {
    const GgufModel g = build_model(File::open(olmo));
    EXPECT_FALSE(g.hp.pre_norms);
    EXPECT_TRUE(g.hp.post_norms && g.hp.qk_norm_full);
    EXPECT_EQ(g.hp.swa_window, 8);
    EXPECT_EQ(g.hp.swa_period, 4);
    EXPECT_EQ(g.hp.rope_base_swa, g.hp.rope_base);
    for (int l = 0; l < 4; ++l) {
      const std::string p = "/model/layers." + std::to_string(l);
      EXPECT_EQ(gqa(g.model, l)->attr_int("local_window_size", 0), l == 3 ? -1 : 8) << l;
      EXPECT_EQ(node_named(g.model, p + "/input_layernorm"), nullptr) << l;
      EXPECT_NE(node_named(g.model, p + "/post_attn_norm"), nullptr) << l;
      EXPECT_NE(node_named(g.model, p + "/post_ffw_norm"), nullptr) << l;
      EXPECT_NE(node_named(g.model, p + "/attn/q_norm/SimplifiedLayerNormalization"), nullptr) << l;
    }
    EXPECT_NE(node_named(g.model, "/model/layers.4/final_norm_layernorm"), nullptr);
    EXPECT_EQ(with_value<uint32_t>(olmo, "olmo2.attention.sliding_window_pattern", 4, 0),
              "m.gguf: olmo2.attention.sliding_window_pattern must be positive");
    EXPECT_EQ(with_dim(olmo, "blk.1.attn_k_norm.weight", 0, 64),
              "m.gguf: tensor 'blk.1.attn_k_norm.weight' has shape [64], expected [128]");
  }
  {
    const GgufModel g = build_model(File::open(gemma));
    EXPECT_TRUE(g.hp.gemma && g.hp.pre_norms && g.hp.tied_output);
    EXPECT_FALSE(g.hp.post_norms);
    EXPECT_EQ(g.hp.n_head_kv, 1);
    EXPECT_EQ(node_named(g.model, "/model/layers.0/post_attn_norm"), nullptr);
    EXPECT_NE(node_named(g.model, "/model/layers.1/mlp/act_fn/FastGelu"), nullptr);
  }
}

// lfm2 files whose convolution keys and tensors disagree: one line each.
TEST(GgufModelBuilder, BadShortConvolutionsRefusedByName) {
  const std::string m = test::tiny_model("lfm2");
  NBITS_REQUIRE_SHARED(m);
  EXPECT_EQ(with_value<uint32_t>(m, "lfm2.shortconv.l_cache", 4, 1),
            "m.gguf: lfm2.shortconv.l_cache 1 must be in [2, 64]");
  EXPECT_EQ(with_value<uint32_t>(m, "lfm2.shortconv.l_cache", 4, 4),
            "m.gguf: tensor 'blk.0.shortconv.conv.weight' has shape [3, 256], expected [4, 256]");
  EXPECT_EQ(with_dim(m, "blk.1.shortconv.in_proj.weight", 1, 512),
            "m.gguf: tensor 'blk.1.shortconv.in_proj.weight' has shape [256, 512], expected [256, 768]");
  EXPECT_EQ(with_value<uint32_t>(m, "lfm2.shortconv.l_cache", 4, 3), "(built)");  // unchanged: loads
}

// Rope scaling keys and tensors out of range: one line each (the tiny mistral3: YaRN and the
// attention temperature; the tiny llama3: rope_freqs.weight).
TEST(GgufModelBuilder, BadRopeScalingRefusedByName) {
  const std::string m = test::tiny_model("mistral3"), l3 = test::tiny_model("llama3");
  NBITS_REQUIRE_SHARED(m);
  NBITS_REQUIRE_SHARED(l3);
  EXPECT_EQ(
      with_value<float>(m, "mistral3.rope.scaling.yarn_beta_fast", 6, -1.0f),
      "m.gguf: mistral3.rope.scaling.yarn_ext_factor / yarn_beta_fast / yarn_beta_slow must be finite, the "
      "betas positive");
  EXPECT_EQ(with_value<float>(m, "mistral3.rope.scaling.factor", 6, 0.0f),
            "m.gguf: rope scaling factor must be positive");
  EXPECT_EQ(with_value<float>(m, "mistral3.attention.temperature_scale", 6, std::nanf("")),
            "m.gguf: mistral3.attention.temperature_scale must be finite");
  EXPECT_EQ(
      with_value<uint32_t>(m, "mistral3.rope.scaling.original_context_length", 4, 0),
      "m.gguf: mistral3.rope.scaling.original_context_length must be positive for attention temperature "
      "scaling");
  EXPECT_EQ(with_dim(l3, "rope_freqs.weight", 0, 16),
            "m.gguf: tensor 'rope_freqs.weight' has shape [16], expected [32]");
  EXPECT_EQ(with_value<float>(m, "mistral3.rope.scaling.yarn_beta_fast", 6, 2.0f), "(built)");  // unchanged
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

// gpt-oss's own tensors: the sinks (one per head), the router and expert biases (one row per expert).
TEST(GgufModelBuilder, BadGptOssTensorsRefusedByName) {
  const std::string m = test::tiny_model("gpt-oss");
  NBITS_REQUIRE_SHARED(m);
  EXPECT_EQ(with_dim(m, "blk.0.attn_sinks.weight", 0, 3),
            "m.gguf: tensor 'blk.0.attn_sinks.weight' has shape [3], expected [4]");
  EXPECT_EQ(with_dim(m, "blk.1.ffn_gate_inp.bias", 0, 7),
            "m.gguf: tensor 'blk.1.ffn_gate_inp.bias' has shape [7], expected [8]");
  EXPECT_EQ(with_dim(m, "blk.0.ffn_down_exps.bias", 1, 4),
            "m.gguf: tensor 'blk.0.ffn_down_exps.bias' has shape [256, 4], expected [256, 8]");
  EXPECT_EQ(with_dim(m, "blk.0.attn_output.bias", 0, 128),
            "m.gguf: tensor 'blk.0.attn_output.bias' has shape [128], expected [256]");
  EXPECT_EQ(with_value<uint32_t>(m, "gpt-oss.expert_used_count", 4, 9),
            "m.gguf: gpt-oss.expert_used_count 9 must be in [1, expert_count 8]");
  EXPECT_EQ(with_value<uint32_t>(m, "gpt-oss.expert_used_count", 4, 2), "(built)");
}

TEST(GgufModelBuilder, GgufPaths) {
  EXPECT_TRUE(is_gguf_path("a/model.gguf"));
  EXPECT_FALSE(is_gguf_path("a/model.onnx"));
  EXPECT_FALSE(is_gguf_path("gguf"));
}

}  // namespace
}  // namespace nbits::gguf
