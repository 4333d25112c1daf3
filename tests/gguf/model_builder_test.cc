#include "gguf/model_builder.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "gguf/gguf_bytes.h"

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

TEST(GgufModelBuilder, GgufPaths) {
  EXPECT_TRUE(is_gguf_path("a/model.gguf"));
  EXPECT_FALSE(is_gguf_path("a/model.onnx"));
  EXPECT_FALSE(is_gguf_path("gguf"));
}

}  // namespace
}  // namespace nbits::gguf
