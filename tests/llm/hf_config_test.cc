// Hugging Face Optimum / transformers.js folders (llm/hf_config.h): config.json and
// generation_config.json into GenaiConfig, the decoder file by --variant, and the layout
// dispatch of load_model_config (genai folder, Optimum folder, a decoder .onnx inside one).
#include "llm/hf_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/error.h"

namespace nbits::llm {
namespace {

namespace fs = std::filesystem;

const char* kQwen = R"({
  "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 896,
  "num_attention_heads": 14, "num_key_value_heads": 2, "num_hidden_layers": 24, "vocab_size": 151936,
  "max_position_embeddings": 32768, "bos_token_id": 151643, "eos_token_id": 151645, "rope_theta": 1000000.0,
  "tie_word_embeddings": true, "rope_scaling": null
})";

std::string error_of(const std::string& config, const std::string& gen = "") {
  try {
    parse_hf_config(config, gen, "m/config.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(HfConfig, SizesFromConfigJson) {
  GenaiConfig c = parse_hf_config(kQwen, "", "m/config.json");
  EXPECT_TRUE(c.from_hf_config);
  EXPECT_EQ(c.model_type, "qwen2");
  EXPECT_EQ(c.hidden_size, 896);
  EXPECT_EQ(c.head_size, 64);  // hidden_size / num_attention_heads when there is no head_dim
  EXPECT_EQ(c.num_attention_heads, 14);
  EXPECT_EQ(c.num_key_value_heads, 2);
  EXPECT_EQ(c.num_hidden_layers, 24);
  EXPECT_EQ(c.vocab_size, 151936);
  EXPECT_EQ(c.context_length, 32768);
  EXPECT_EQ(*c.bos_token_id, 151643);
  EXPECT_TRUE(c.is_eos(151645));
  // Optimum's I/O names.
  EXPECT_EQ(c.input_ids_name, "input_ids");
  EXPECT_EQ(c.position_ids_name, "position_ids");
  EXPECT_EQ(c.past_key_pattern, "past_key_values.%d.key");
  EXPECT_EQ(c.present_value_pattern, "present.%d.value");
  EXPECT_FALSE(c.search.do_sample);
}

TEST(HfConfig, HeadDimAndKvHeadDefaults) {
  // Qwen3 / Gemma give head_dim explicitly (not hidden / heads); no num_key_value_heads = MHA.
  GenaiConfig c = parse_hf_config(R"({"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
                                      "head_dim": 32, "max_position_embeddings": 256})",
                                  "", "m/config.json");
  EXPECT_EQ(c.head_size, 32);
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_TRUE(c.eos_token_ids.empty());
}

TEST(HfConfig, TextConfigOfMultimodalConfigs) {
  GenaiConfig c = parse_hf_config(R"({"model_type": "gemma3", "eos_token_id": [1, 106],
      "text_config": {"model_type": "gemma3_text", "hidden_size": 640, "num_attention_heads": 4,
                      "num_key_value_heads": 1, "head_dim": 256, "num_hidden_layers": 18,
                      "max_position_embeddings": 32768, "vocab_size": 262144}})",
                                  "", "m/config.json");
  EXPECT_EQ(c.model_type, "gemma3_text");
  EXPECT_EQ(c.head_size, 256);
  EXPECT_EQ(c.num_hidden_layers, 18);
  EXPECT_EQ(c.vocab_size, 262144);
  EXPECT_TRUE(c.is_eos(1));
  EXPECT_TRUE(c.is_eos(106));
}

TEST(HfConfig, GenerationConfigOverridesEosAndSampling) {
  GenaiConfig c = parse_hf_config(kQwen, R"({"eos_token_id": [151645, 151643], "pad_token_id": 151643,
      "do_sample": true, "temperature": 0.7, "top_k": 20, "top_p": 0.8, "repetition_penalty": 1.05,
      "max_length": 20})",
                                  "m/config.json");
  EXPECT_TRUE(c.is_eos(151643));
  EXPECT_TRUE(c.is_eos(151645));
  EXPECT_EQ(*c.pad_token_id, 151643);
  EXPECT_TRUE(c.search.do_sample);
  EXPECT_DOUBLE_EQ(c.search.temperature, 0.7);
  EXPECT_EQ(c.search.top_k, 20);
  EXPECT_DOUBLE_EQ(c.search.top_p, 0.8);
  EXPECT_DOUBLE_EQ(c.search.repetition_penalty, 1.05);
  // generate()'s max_length default is not the context.
  EXPECT_EQ(c.default_max_length(), 32768);
}

TEST(HfConfig, ErrorsNameTheFileAndField) {
  EXPECT_NE(error_of("{").find("m/config.json: invalid JSON"), std::string::npos);
  EXPECT_NE(error_of("[1]").find("top level must be a JSON object"), std::string::npos);
  EXPECT_NE(error_of(R"({"hidden_size": 64, "num_hidden_layers": 2, "max_position_embeddings": 8})")
                .find("missing required field 'num_attention_heads'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"hidden_size": "64", "num_attention_heads": 4, "num_hidden_layers": 2})")
                .find("field 'hidden_size' must be an integer (got string)"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2})")
                .find("missing 'max_position_embeddings'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"hidden_size": 65, "num_attention_heads": 4, "num_hidden_layers": 2,
                         "max_position_embeddings": 8})")
                .find("not a multiple of num_attention_heads"),
            std::string::npos);
  EXPECT_NE(
      error_of(kQwen, R"({"top_p": 0})").find("m/generation_config.json: field 'top_p' must be in (0, 1]"),
      std::string::npos);
  EXPECT_NE(error_of(kQwen, R"({"eos_token_id": "x"})").find("'eos_token_id' must be an integer or a list"),
            std::string::npos);
}

// A scratch folder tree, removed at the end.
class HfFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nbits_hf_config_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const std::string& rel, const std::string& text) {
    fs::create_directories(fs::path(root_ + "/" + rel).parent_path());
    std::ofstream(root_ + "/" + rel) << text;
  }
  std::string error_of(const std::string& path, const std::string& variant = "") {
    try {
      load_model_config(path, variant);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  std::string root_;
};

TEST_F(HfFolder, VariantChoosesTheDecoderFile) {
  write("m/config.json", kQwen);
  write("m/onnx/model.onnx", "");
  write("m/onnx/model_fp16.onnx", "");
  write("m/onnx/model_q4.onnx", "");
  const std::string m = root_ + "/m";
  EXPECT_EQ(load_model_config(m).filename, "onnx/model_q4.onnx");  // int4 first
  EXPECT_EQ(load_model_config(m + "/", "fp16").model_path(), m + "/onnx/model_fp16.onnx");
  EXPECT_EQ(load_model_config(m, "fp32").filename, "onnx/model.onnx");
  EXPECT_EQ(load_model_config(m).dir, m);
  const std::string e = error_of(m, "int8");
  EXPECT_NE(e.find("has no int8 decoder (onnx/model_int8.onnx); variants present: q4, fp16, fp32"),
            std::string::npos)
      << e;
  EXPECT_NE(error_of(m, "int3").find("unknown variant 'int3' (expected q4|"), std::string::npos);
}

TEST_F(HfFolder, DecoderFileInsideTheFolder) {
  write("m/config.json", kQwen);
  write("m/onnx/model_q4f16.onnx", "");
  GenaiConfig c = load_model_config(root_ + "/m/onnx/model_q4f16.onnx");
  EXPECT_EQ(c.dir, root_ + "/m");
  EXPECT_EQ(c.filename, "onnx/model_q4f16.onnx");
  EXPECT_EQ(c.num_hidden_layers, 24);
  // A plain `optimum-cli export onnx` output: model.onnx beside config.json.
  write("p/config.json", kQwen);
  write("p/model.onnx", "");
  EXPECT_EQ(load_model_config(root_ + "/p").filename, "model.onnx");
  EXPECT_EQ(load_model_config(root_ + "/p/model.onnx").model_path(), root_ + "/p/model.onnx");
  EXPECT_NE(error_of(root_ + "/p/model.onnx", "q4").find("not both"), std::string::npos);
}

TEST_F(HfFolder, WhatIsMissingInOneLine) {
  write("empty/readme.txt", "");
  EXPECT_NE(error_of(root_ + "/empty")
                .find("no genai_config.json (onnxruntime-genai) or config.json (Hugging "
                      "Face Optimum) in "),
            std::string::npos);
  write("nodecoder/config.json", kQwen);
  EXPECT_NE(error_of(root_ + "/nodecoder").find("has config.json but no decoder: expected onnx/model.onnx"),
            std::string::npos);
  write("loose/x.onnx", "");
  EXPECT_NE(error_of(root_ + "/loose/x.onnx").find("no genai_config.json or config.json next to"),
            std::string::npos);
  EXPECT_NE(error_of(root_ + "/nope").find("does not exist"), std::string::npos);
}

TEST_F(HfFolder, GenaiFoldersKeepTheirConfig) {
  write("g/genai_config.json", R"({"model": {"context_length": 64, "decoder": {"filename": "dec.onnx",
      "head_size": 8, "num_attention_heads": 2, "num_hidden_layers": 1}}})");
  write("g/config.json", kQwen);  // the builder copies config.json too: genai_config.json wins
  write("g/dec.onnx", "");
  GenaiConfig c = load_model_config(root_ + "/g");
  EXPECT_FALSE(c.from_hf_config);
  EXPECT_EQ(c.filename, "dec.onnx");
  EXPECT_EQ(load_model_config(root_ + "/g/dec.onnx").context_length, 64);
  EXPECT_NE(error_of(root_ + "/g", "q4").find("is an onnxruntime-genai folder"), std::string::npos);
}

}  // namespace
}  // namespace nbits::llm
