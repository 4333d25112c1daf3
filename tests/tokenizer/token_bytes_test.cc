// Tokenizer::token_bytes (what constrained decoding walks): for every shared case, the bytes of
// the ids concatenated are the decoded text (before a SentencePiece decoder strips the text's
// leading space), and special added tokens are their content.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/shared_data.h"
#include "tokenizer/tokenizer.h"

namespace nbits {
namespace {

using nlohmann::json;

void check(const std::string& name, bool strips_leading_space) {
  const std::string cases_path = testing::shared_path("tokenizers/cases/tokenizer_cases_" + name + ".json");
  NBITS_REQUIRE_SHARED(cases_path);
  Tokenizer tok = Tokenizer::load(testing::shared_path("tokenizers/" + name));
  const std::vector<std::string> bytes = tok.token_bytes();
  ASSERT_EQ(bytes.size(), static_cast<size_t>(tok.vocab_size()));
  json doc = json::parse(read_text_file(cases_path));
  int n = 0;
  for (const json& c : doc["cases"]) {
    if (!c.contains("ids")) continue;
    const std::string text = c["text"];
    SCOPED_TRACE(name + ": " + text);
    const std::vector<int32_t> ids = tok.encode(text, false);
    std::string joined;
    for (int32_t id : ids) joined += bytes[static_cast<size_t>(id)];
    const std::string want = tok.decode(ids, false);
    // The decoder strips the one space the normalizer put before the text; the bytes keep it.
    if (strips_leading_space && joined.size() == want.size() + 1 && joined[0] == ' ') joined.erase(0, 1);
    EXPECT_EQ(joined, want);
    ++n;
  }
  EXPECT_GE(n, 20);
  const int32_t eos = tok.eos_id();
  ASSERT_GE(eos, 0);
  EXPECT_TRUE(tok.is_special(eos));
  EXPECT_EQ(bytes[static_cast<size_t>(eos)], tok.eos_token());
}

TEST(TokenBytes, Qwen25ByteLevel) { check("qwen2.5", false); }
TEST(TokenBytes, SmolLM2ByteLevel) { check("smollm2", false); }
TEST(TokenBytes, TinyLlamaSentencePiece) { check("tinyllama", true); }

}  // namespace
}  // namespace nbits
