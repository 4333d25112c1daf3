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
            "gemma3, granite)");
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

// The tiny gemma2 / granite files with one float32 metadata value changed: a bad softcap or
// multiplier is refused with one line naming the key.
std::string with_float(const std::string& path, const std::string& key, float v) {
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
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

TEST(GgufModelBuilder, GgufPaths) {
  EXPECT_TRUE(is_gguf_path("a/model.gguf"));
  EXPECT_FALSE(is_gguf_path("a/model.onnx"));
  EXPECT_FALSE(is_gguf_path("gguf"));
}

}  // namespace
}  // namespace nbits::gguf
