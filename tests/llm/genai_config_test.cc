#include "llm/genai_config.h"

#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "support/shared_data.h"

namespace nbits::llm {
namespace {

const char* kMinimal = R"({
  "model": {"context_length": 128, "eos_token_id": 2, "bos_token_id": 1, "vocab_size": 32,
            "decoder": {"head_size": 16, "num_attention_heads": 4, "num_hidden_layers": 2,
                        "num_key_value_heads": 2}},
  "search": {"do_sample": true, "temperature": 0.7, "top_k": 20, "top_p": 0.8, "max_length": 64}
})";

std::string error_of(const std::string& text) {
  try {
    parse_genai_config(text, "cfg.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(GenaiConfig, ParsesFieldsAndDefaults) {
  GenaiConfig c = parse_genai_config(kMinimal, "cfg.json");
  EXPECT_EQ(c.context_length, 128);
  ASSERT_EQ(c.eos_token_ids.size(), 1u);
  EXPECT_TRUE(c.is_eos(2));
  EXPECT_FALSE(c.is_eos(1));
  EXPECT_EQ(*c.bos_token_id, 1);
  EXPECT_EQ(c.num_key_value_heads, 2);
  EXPECT_EQ(c.input_ids_name, "input_ids");
  EXPECT_EQ(c.present_value_pattern, "present.%d.value");
  EXPECT_TRUE(c.search.do_sample);
  EXPECT_DOUBLE_EQ(c.search.temperature, 0.7);
  EXPECT_EQ(c.search.top_k, 20);
  EXPECT_EQ(c.default_max_length(), 64);
  EXPECT_EQ(format_layer_name(c.past_key_pattern, 11), "past_key_values.11.key");
}

TEST(GenaiConfig, ErrorsNameTheFieldAndFile) {
  EXPECT_EQ(error_of("{}"), "cfg.json: missing required field 'model'");
  EXPECT_EQ(error_of("[1]"), "cfg.json: top level must be a JSON object");
  EXPECT_NE(error_of("{\"model\":").find("cfg.json: invalid JSON"), std::string::npos);
  std::string bad = kMinimal;
  bad.replace(bad.find("\"head_size\": 16"), 15, "\"head_size\": \"16\"");
  EXPECT_EQ(error_of(bad), "cfg.json: field 'model.decoder.head_size' must be an integer (got string)");
  bad = kMinimal;
  bad.replace(bad.find("\"eos_token_id\": 2"), 17, "\"eos_token_id\": [2, \"x\"]");
  EXPECT_EQ(error_of(bad),
            "cfg.json: field 'model.eos_token_id' must be an integer or a list of integers (got array)");
  bad = kMinimal;
  bad.replace(bad.find("\"context_length\": 128, "), 23, "");
  EXPECT_EQ(error_of(bad), "cfg.json: missing required field 'model.context_length'");
  bad = kMinimal;
  bad.replace(bad.find("\"top_p\": 0.8"), 12, "\"top_p\": 0");
  EXPECT_EQ(error_of(bad), "cfg.json: field 'search.top_p' must be in (0, 1]");
  bad = kMinimal;
  bad.replace(bad.find("\"num_key_value_heads\": 2"), 24,
              "\"num_key_value_heads\": 2, \"inputs\": {\"past_key_names\": \"past.key\"}");
  EXPECT_EQ(
      error_of(bad),
      "cfg.json: field 'model.decoder.inputs.past_key_names' must contain exactly one %d (got \"past.key\")");
}

TEST(GenaiConfig, LoadsStoriesConfig) {
  const std::string dir = testing::shared_path("models/stories260K/onnx_int4");
  NBITS_REQUIRE_SHARED(dir + "/genai_config.json");
  GenaiConfig c = load_genai_config(dir);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(c.num_hidden_layers, 5);
  EXPECT_EQ(c.head_size, 16);
  EXPECT_EQ(c.model_path(), dir + "/model.onnx");
  EXPECT_FALSE(c.search.do_sample);
  EXPECT_THROW(load_genai_config(dir + "/no_such_dir"), Error);
}

}  // namespace
}  // namespace nbits::llm

namespace nbits::llm {
namespace {

// Builders before 0.9 write no eos_token_id when the model has none: loads, stops at no id.
TEST(GenaiConfig, EosTokenIdIsOptional) {
  const GenaiConfig c = parse_genai_config(R"({"model": {"context_length": 16, "decoder": {"head_size": 4,
      "hidden_size": 8, "num_attention_heads": 2, "num_key_value_heads": 1, "num_hidden_layers": 1}}})",
                                           "old.json");
  EXPECT_TRUE(c.eos_token_ids.empty());
  EXPECT_FALSE(c.is_eos(0));
}

}  // namespace
}  // namespace nbits::llm
