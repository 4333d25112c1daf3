// Every case of ../shared/tokenizers/cases/*.json: ids, ids with special tokens, tokens, decoded
// text (and the streaming decoder agrees with decode() on each).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/shared_data.h"
#include "tokenizer/tokenizer.h"

namespace nbits {
namespace {

using nlohmann::json;

std::vector<int32_t> ids_of(const json& j) { return j.get<std::vector<int32_t>>(); }

std::string stream_all(const Tokenizer& tok, const std::vector<int32_t>& ids, bool skip) {
  StreamDecoder sd(tok, skip);
  std::string out;
  for (int32_t id : ids) out += sd.push(id);
  return out + sd.flush();
}

void check_cases(const std::string& name, const std::string& dir) {
  std::string cases_path = testing::shared_path("tokenizers/cases/tokenizer_cases_" + name + ".json");
  NBITS_REQUIRE_SHARED(cases_path);
  Tokenizer tok = Tokenizer::load(testing::shared_path(dir));
  json doc = json::parse(read_text_file(cases_path));
  int n = 0;
  for (const json& c : doc["cases"]) {
    std::string text = c["text"];
    SCOPED_TRACE(name + ": " + text);
    if (c.contains("ids")) {
      std::vector<int32_t> ids = tok.encode(text, false);
      EXPECT_EQ(ids, ids_of(c["ids"]));
      std::vector<std::string> tokens;
      for (int32_t id : ids) tokens.push_back(tok.id_to_token(id));
      EXPECT_EQ(tokens, c["tokens"].get<std::vector<std::string>>());
      EXPECT_EQ(tok.encode(text, true), ids_of(c["ids_with_special"]));
      EXPECT_EQ(tok.decode(ids, false), c["decoded"].get<std::string>());
      for (bool skip : {false, true}) {
        std::vector<int32_t> with = tok.encode(text, true);
        EXPECT_EQ(stream_all(tok, with, skip), tok.decode(with, skip));
      }
    } else {  // stories260K: llama2.c reference, ids with BOS
      std::vector<int32_t> ids = tok.encode(text, true);
      EXPECT_EQ(ids, ids_of(c.contains("hf_ids_with_bos") ? c["hf_ids_with_bos"] : c["ids_with_bos"]));
      EXPECT_EQ(tok.decode(ids, true), c["decoded"].get<std::string>());
      EXPECT_EQ(stream_all(tok, ids, true), tok.decode(ids, true));
    }
    ++n;
  }
  EXPECT_GE(n, 10);
}

TEST(TokenizerCases, Qwen25) { check_cases("qwen2.5", "tokenizers/qwen2.5"); }
TEST(TokenizerCases, SmolLM2) { check_cases("smollm2", "tokenizers/smollm2"); }
TEST(TokenizerCases, TinyLlama) { check_cases("tinyllama", "tokenizers/tinyllama"); }
TEST(TokenizerCases, Stories260K) { check_cases("stories260K", "models/stories260K/onnx_int4"); }

}  // namespace
}  // namespace nbits
