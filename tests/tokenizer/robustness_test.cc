// Invalid UTF-8 input, malformed or unsupported tokenizer files, the regex engine and NFC.
#include <gtest/gtest.h>

#include "base/error.h"
#include "support/shared_data.h"
#include "tokenizer/regex.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace nbits {
namespace {

// A tiny byte-level BPE tokenizer.json with the given overrides spliced in.
std::string tiny_json(
    const std::string& normalizer = "null",
    const std::string& pre = R"({"type": "ByteLevel", "add_prefix_space": false, "use_regex": true})",
    const std::string& decoder = R"({"type": "ByteLevel"})") {
  return R"({"version": "1.0", "added_tokens": [{"id": 5, "content": "<eos>", "special": true}],
    "normalizer": )" +
         normalizer + R"(, "pre_tokenizer": )" + pre + R"(, "post_processor": null,
    "decoder": )" +
         decoder + R"(, "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "Ġ": 3, "Ġab": 4},
    "merges": ["a b", "Ġ ab"]}})";
}

TEST(TokenizerRobustness, InvalidUtf8IsReplacedByMaximalSubparts) {
  EXPECT_EQ(tok::sanitize_utf8("a\xED\xA0\x80"
                               "b"),
            "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(tok::sanitize_utf8("\xE2\x82"), "\xEF\xBF\xBD");              // truncated: one U+FFFD
  EXPECT_EQ(tok::sanitize_utf8("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");  // valid emoji unchanged
  EXPECT_EQ(tok::sanitize_utf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong
  std::string path = testing::shared_path("tokenizers/qwen2.5");
  NBITS_REQUIRE_SHARED(path + "/tokenizer.json");
  Tokenizer tok = Tokenizer::load(path);
  EXPECT_EQ(tok.encode("a\xFF"
                       "b",
                       false),
            tok.encode("a\xEF\xBF\xBD"
                       "b",
                       false));
  EXPECT_EQ(tok.encode("x\xE4\xBD", false), tok.encode("x\xEF\xBF\xBD", false));
}

TEST(TokenizerRobustness, StreamDecoderHoldsIncompleteCharacters) {
  std::string path = testing::shared_path("tokenizers/tinyllama");
  NBITS_REQUIRE_SHARED(path + "/tokenizer.json");
  Tokenizer tok = Tokenizer::load(path);
  std::vector<int32_t> ids = tok.encode("🦙 ok", false);  // byte-fallback <0xF0><0x9F>... tokens
  ASSERT_GT(ids.size(), 4u);
  StreamDecoder sd(tok);
  std::string first = sd.push(ids[0]);
  EXPECT_EQ(first, "");  // no partial character is emitted
  std::string all = first;
  for (size_t i = 1; i < ids.size(); ++i) {
    std::string piece = sd.push(ids[i]);
    EXPECT_TRUE(tok::utf8_is_valid(piece));
    all += piece;
  }
  all += sd.flush();
  EXPECT_EQ(all, tok.decode(ids, false));
  EXPECT_EQ(all, "🦙 ok");
  EXPECT_THROW(sd.push(-1), Error);
  EXPECT_THROW(tok.decode({1 << 30}, false), Error);
}

TEST(TokenizerRobustness, TinyTokenizerFromJson) {
  Tokenizer t = Tokenizer::from_json(tiny_json());
  EXPECT_EQ(t.encode("ab ab<eos>", false), (std::vector<int32_t>{2, 4, 5}));
  EXPECT_EQ(t.decode({2, 4, 5}, true), "ab ab");
  EXPECT_EQ(t.decode({2, 4, 5}, false), "ab ab<eos>");
  EXPECT_TRUE(t.is_special(5));
  EXPECT_EQ(t.token_to_id("Ġab"), 4);
  EXPECT_EQ(t.vocab_size(), 6);
}

void expect_error(const std::string& json, const std::string& needle) {
  try {
    Tokenizer::from_json(json);
    ADD_FAILURE() << "no error for " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(TokenizerRobustness, MalformedAndUnsupportedFilesAreClearErrors) {
  expect_error("", "invalid JSON");
  expect_error("{", "invalid JSON");
  expect_error("[1, 2]", "invalid JSON");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": "x"}, "merges": []}})", "expected an integer");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a z"]}})", "out of vocabulary");
  expect_error(R"({"model": {"type": "WordPiece", "vocab": {}}})", "model type 'WordPiece'");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}}})", "merges");
  expect_error(tiny_json(R"({"type": "NFKC"})"), "normalizer type 'NFKC'");
  expect_error(tiny_json("null", R"({"type": "Metaspace"})"), "pre-tokenizer type 'Metaspace'");
  expect_error(
      tiny_json("null", R"({"type": "Split", "pattern": {"Regex": "(?<=a)b"}, "behavior": "Isolated"})"),
      "lookbehind");
  expect_error(
      tiny_json("null", R"({"type": "Split", "pattern": {"Regex": "\\p{Han}"}, "behavior": "Isolated"})"),
      "\\p{Han}");
  expect_error(tiny_json("null", R"({"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Contiguous"})"),
               "behavior 'Contiguous'");
  expect_error(tiny_json("null", "null", R"({"type": "WordPiece"})"), "decoder type 'WordPiece'");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "added_tokens": [{"id": 1}]})",
               "content");
  EXPECT_THROW(Tokenizer::from_json(tiny_json(), "{not json"), Error);
  EXPECT_THROW(Tokenizer::from_json(tiny_json(), R"({"bos_token": 5})"), Error);
  EXPECT_THROW(Tokenizer::load("/nonexistent/dir"), Error);
}

std::vector<std::string> matches(const std::string& pattern, const std::string& text) {
  tok::Regex re(pattern);
  std::vector<uint32_t> cps = tok::decode_utf8(text);
  std::vector<std::string> r;
  re.for_each_match(cps.data(), cps.size(), [&](size_t b, size_t e) {
    r.push_back(tok::encode_utf8(std::vector<uint32_t>(cps.begin() + static_cast<ptrdiff_t>(b),
                                                       cps.begin() + static_cast<ptrdiff_t>(e))));
  });
  return r;
}

TEST(TokenizerRegex, Constructs) {
  const std::string gpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
  EXPECT_EQ(matches(gpt2, "I'm  here 42!"), (std::vector<std::string>{"I", "'m", " ", " here", " 42", "!"}));
  EXPECT_EQ(matches("(?i:'s|'t)", "'S 'ſ 'T"),
            (std::vector<std::string>{"'S", "'ſ", "'T"}));  // Unicode folding
  EXPECT_EQ(matches("a{2,3}?", "aaaa"), (std::vector<std::string>{"aa", "aa"}));
  EXPECT_EQ(matches("[a-c]+|x(?=y)", "abcxyxz"), (std::vector<std::string>{"abc", "x"}));
  EXPECT_EQ(matches(R"(\d+)", "a١٢3"), (std::vector<std::string>{"١٢3"}));
  EXPECT_THROW(tok::Regex("(a"), Error);
  EXPECT_THROW(tok::Regex("a++"), Error);
  EXPECT_THROW(tok::Regex("(a*)*"), Error);
  EXPECT_THROW(tok::Regex(R"(\bword)"), Error);
}

TEST(TokenizerUnicode, Nfc) {
  EXPECT_EQ(tok::nfc("e\xCC\x81"), "\xC3\xA9");                      // e + acute -> é
  EXPECT_EQ(tok::nfc("\xE1\x84\x80\xE1\x85\xA1"), "\xEA\xB0\x80");   // Hangul L+V -> 가
  EXPECT_EQ(tok::nfc("a\xCC\xA3\xCC\x87"), "\xE1\xBA\xA1\xCC\x87");  // reordered: ạ + dot above
  EXPECT_EQ(tok::nfc("\xE2\x84\xA6"), "\xCE\xA9");                   // Ohm sign -> Omega (singleton)
  EXPECT_EQ(tok::nfc("\xEF\xAC\x81"), "\xEF\xAC\x81");               // ﬁ unchanged (compatibility only)
  EXPECT_TRUE(tok::is_letter(0x4E00));
  EXPECT_TRUE(tok::is_number(0x2460));
  EXPECT_TRUE(tok::is_whitespace(0x3000));
  EXPECT_FALSE(tok::is_whitespace(0x200B));
}

}  // namespace
}  // namespace nbits
