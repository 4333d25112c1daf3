// Differential test against the Hugging Face tokenizers library (Rust, npm @anush008/tokenizers):
// tests/tokenizer/node/diff.js encodes 2000 seeded random strings per tokenizer (mixed scripts,
// whitespace runs, digits, emoji, CJK, combining marks, special-token fragments); every id list
// (with and without special tokens) and every decoded text must match, and the streaming
// decoder must agree with decode(). node_modules: $NBITS_TOKENIZER_NODE_MODULES, else
// tests/tokenizer/node/node_modules (npm install there). Missing: skip, or fail when CI=true.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/shared_data.h"
#include "support/source_dir.h"
#include "tokenizer/tokenizer.h"

namespace nbits {
namespace {

std::string node_modules() {
  if (const char* env = std::getenv("NBITS_TOKENIZER_NODE_MODULES"); env && *env) return env;
  return std::string(nbits::testing::source_dir()) + "/tests/tokenizer/node/node_modules";
}

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  if (pclose(p) != 0) out.clear();
  return out;
}

void differential(const std::string& rel, int seed) {
  std::string path = testing::shared_path(rel);
  NBITS_REQUIRE_SHARED(path);
  std::string modules = node_modules();
  if (!std::filesystem::exists(modules + "/@anush008/tokenizers")) {
    if (testing::in_ci())
      FAIL() << "missing " << modules << "/@anush008/tokenizers (npm install in tests/tokenizer/node)";
    GTEST_SKIP() << "missing " << modules << "/@anush008/tokenizers (cd tests/tokenizer/node && npm install)";
  }
  std::string script = std::string(nbits::testing::source_dir()) + "/tests/tokenizer/node/diff.js";
  std::string out = run("NODE_PATH='" + modules + "' node '" + script + "' '" + path + "' " +
                        std::to_string(seed) + " 2000");
  ASSERT_FALSE(out.empty()) << "node " << script << " failed";
  auto cases = nlohmann::json::parse(out);
  ASSERT_EQ(cases.size(), 2000u);
  Tokenizer tok = Tokenizer::load(path);
  int mismatches = 0;
  for (const auto& c : cases) {
    std::string text = c["text"];
    auto ids = tok.encode(text, false);
    auto ids_special = tok.encode(text, true);
    std::string decoded = tok.decode(ids, false);
    StreamDecoder sd(tok);
    std::string streamed;
    for (int32_t id : ids_special) streamed += sd.push(id);
    streamed += sd.flush();
    bool ok = ids == c["ids"].get<std::vector<int32_t>>() &&
              ids_special == c["ids_special"].get<std::vector<int32_t>>() &&
              decoded == c["decoded"].get<std::string>() && streamed == tok.decode(ids_special, false);
    if (!ok && ++mismatches <= 5) {
      ADD_FAILURE() << rel << ": mismatch for " << nlohmann::json(text).dump()
                    << "\n ours: " << nlohmann::json(ids).dump() << " " << nlohmann::json(decoded).dump()
                    << "\n  ref: " << c["ids"].dump() << " " << c["decoded"].dump();
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(TokenizerDifferential, Qwen25) { differential("tokenizers/qwen2.5/tokenizer.json", 1); }
TEST(TokenizerDifferential, SmolLM2) { differential("tokenizers/smollm2/tokenizer.json", 2); }
TEST(TokenizerDifferential, TinyLlama) { differential("tokenizers/tinyllama/tokenizer.json", 3); }
TEST(TokenizerDifferential, Stories260K) { differential("models/stories260K/onnx_int4/tokenizer.json", 4); }

}  // namespace
}  // namespace nbits
