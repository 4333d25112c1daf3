// The real SmolLM2-135M-Instruct GGUF ($NBITS_SMOLLM2_GGUF, tools/setup_models.sh) read by the C++
// reader: its tokenizer.ggml.* metadata (gguf::read_vocab) through tokenizer_from_gguf gives the Hugging Face
// tokenizer.json's ids on every shared case and llama.cpp's own ids (tests/tokenizer/data).
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "gguf/reader.h"
#include "gguf/vocab.h"
#include "support/shared_data.h"
#include "support/source_dir.h"
#include "tokenizer/gguf_vocab.h"

namespace nbits {
namespace {

using nlohmann::json;

std::string smollm2_gguf() {
  if (const char* p = std::getenv("NBITS_SMOLLM2_GGUF"); p && *p) return p;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "") + "/.cache/nbits/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
}

TEST(GgufTokenizer, SmolLM2MatchesHuggingFaceAndLlamaCpp) {
  const std::string path = smollm2_gguf();
  if (!file_exists(path)) {
    if (testing::in_ci()) FAIL() << "missing " << path << " (tools/setup_models.sh)";
    GTEST_SKIP() << "missing " << path << " (run tools/setup_models.sh)";
  }
  NBITS_REQUIRE_SHARED(testing::shared_path("tokenizers/cases/tokenizer_cases_smollm2.json"));
  gguf::File f = gguf::File::open(path);
  GgufVocab v = gguf::read_vocab(f);
  EXPECT_EQ(v.model, "gpt2");
  EXPECT_EQ(v.pre, "smollm");
  EXPECT_EQ(v.tokens.size(), 49152u);
  Tokenizer tok = tokenizer_from_gguf(v);
  Tokenizer hf = Tokenizer::load(testing::shared_path("tokenizers/smollm2"));
  EXPECT_EQ(tok.chat_template(), hf.chat_template());
  EXPECT_EQ(tok.eos_id(), hf.eos_id());

  json cases =
      json::parse(read_text_file(testing::shared_path("tokenizers/cases/tokenizer_cases_smollm2.json")));
  int agree = 0, n = 0;
  for (const json& c : cases["cases"]) {
    const std::string text = c["text"];
    SCOPED_TRACE(text);
    std::vector<int32_t> ids = tok.encode(text, false);
    const bool ok = ids == c["ids"].get<std::vector<int32_t>>() &&
                    tok.encode(text, true) == c["ids_with_special"].get<std::vector<int32_t>>() &&
                    tok.decode(ids, false) == c["decoded"].get<std::string>();
    EXPECT_TRUE(ok);
    agree += ok;
    ++n;
  }
  EXPECT_EQ(agree, n);
  EXPECT_GE(n, 50);

  json ref = json::parse(read_text_file(std::string(nbits::testing::source_dir()) +
                                        "/tests/tokenizer/data/llamacpp_smollm2.json"));
  int same = 0, m = 0;
  for (const json& c : ref["cases"]) {
    same +=
        tok.encode(c["text"].get<std::string>(), false) == c["ids_parse_special"].get<std::vector<int32_t>>();
    ++m;
  }
  EXPECT_EQ(same, m);
  EXPECT_GE(m, 50);
}

}  // namespace
}  // namespace nbits
