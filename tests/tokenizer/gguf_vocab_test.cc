// tokenizer_from_gguf: byte-level vocabularies made from tokenizer.json files as llama.cpp's
// converter makes them (SmolLM2 with the "smollm" split, Qwen2.5 with "qwen2"), SentencePiece
// "llama" vocabularies (TinyLlama's tokenizer.model as a GGUF converter reads it, and a small one
// built here), the pre-tokenizer names, the errors. The real SmolLM2 GGUF, read by the GGUF
// reader, against Hugging Face and llama.cpp: tests/gguf/smollm2_tokenizer_test.cc.
#include "tokenizer/gguf_vocab.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "base/error.h"
#include "support/shared_data.h"
#include "support/source_dir.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

namespace nbits {
namespace {

using nlohmann::json;

std::vector<int32_t> ids_of(const json& j) { return j.get<std::vector<int32_t>>(); }

// What llama.cpp's convert_hf_to_gguf.py writes for a byte-level BPE tokenizer.json: tokens by
// id (added tokens included), special added tokens as control (3), other added as user-defined (4).
GgufVocab vocab_from_hf_bpe(const std::string& tokenizer_json, const std::string& pre) {
  json t = json::parse(read_text_file(tokenizer_json));
  GgufVocab v;
  v.model = "gpt2";
  v.pre = pre;
  size_t n = 0;
  for (auto& [tok, id] : t["model"]["vocab"].items()) n = std::max(n, id.get<size_t>() + 1);
  for (const json& a : t["added_tokens"]) n = std::max(n, a["id"].get<size_t>() + 1);
  v.tokens.resize(n);
  v.token_types.assign(n, 1);
  for (auto& [tok, id] : t["model"]["vocab"].items()) v.tokens[id.get<size_t>()] = tok;
  for (const json& a : t["added_tokens"]) {
    v.tokens[a["id"].get<size_t>()] = a["content"].get<std::string>();
    v.token_types[a["id"].get<size_t>()] = a["special"].get<bool>() ? 3 : 4;
  }
  for (const json& m : t["model"]["merges"])
    v.merges.push_back(m.is_string() ? m.get<std::string>()
                                     : m[0].get<std::string>() + " " + m[1].get<std::string>());
  return v;
}

// Hugging Face's cases: ids, ids with special tokens, decoded text. Returns the number that agree.
int agree_with_cases(const Tokenizer& tok, const std::string& name,
                     std::vector<std::string>* differing = nullptr) {
  json doc =
      json::parse(read_text_file(testing::shared_path("tokenizers/cases/tokenizer_cases_" + name + ".json")));
  int agree = 0, n = 0;
  for (const json& c : doc["cases"]) {
    std::string text = c["text"];
    std::vector<int32_t> ids = tok.encode(text, false);
    bool ok = ids == ids_of(c["ids"]) && tok.encode(text, true) == ids_of(c["ids_with_special"]) &&
              tok.decode(ids, false) == c["decoded"].get<std::string>();
    agree += ok;
    if (!ok && differing) differing->push_back(text);
    ++n;
  }
  EXPECT_GE(n, 50);
  return agree;
}

// The Qwen2.5 tokenizer.json as a GGUF vocabulary with llama.cpp's "qwen2" split. llama.cpp does
// not apply tokenizer.json's NFC normalizer, so only texts that NFC changes may differ.
TEST(GgufVocab, Qwen2PreTokenizerOnQwen25Vocab) {
  std::string path = testing::shared_path("tokenizers/qwen2.5/tokenizer.json");
  NBITS_REQUIRE_SHARED(path);
  Tokenizer tok = tokenizer_from_gguf(vocab_from_hf_bpe(path, "qwen2"));
  std::vector<std::string> differing;
  int agree = agree_with_cases(tok, "qwen2.5", &differing);
  ASSERT_EQ(differing.size(), 1u) << (differing.empty() ? "" : differing[0]);
  EXPECT_EQ(differing[0].substr(0, 3), "e\xCC\x81");  // "é (decomposed e-acute) vs é": NFC composes it
  EXPECT_GE(agree, 50);
}

// SmolLM2's tokenizer.json through the same converter (no cache needed): the "smollm" split.
TEST(GgufVocab, SmolLMPreTokenizerOnHfVocab) {
  std::string path = testing::shared_path("tokenizers/smollm2/tokenizer.json");
  NBITS_REQUIRE_SHARED(path);
  Tokenizer tok = tokenizer_from_gguf(vocab_from_hf_bpe(path, "smollm"));
  json doc =
      json::parse(read_text_file(testing::shared_path("tokenizers/cases/tokenizer_cases_smollm2.json")));
  EXPECT_EQ(agree_with_cases(tok, "smollm2"), static_cast<int>(doc["cases"].size()));
}

// A byte-level vocabulary built here: every byte's stand-in character, then a few merged tokens.
GgufVocab tiny_byte_level(const std::string& pre) {
  GgufVocab v;
  v.model = "gpt2";
  v.pre = pre;
  for (int b = 0; b < 256; ++b) {
    std::string s;
    tok::append_utf8(s, tok::byte_level_char(static_cast<uint8_t>(b)));
    v.tokens.push_back(s);
  }
  for (const char* t : {"12", "123", "45", "ab",
                        "\xC4\xA0"
                        "a",
                        "\xC4\xA0"
                        "ab",
                        "<|eot|>"})
    v.tokens.push_back(t);
  v.merges = {"1 2", "12 3", "4 5", "\xC4\xA0 a"};  // no "a b" merge: "ab" is reached only as a whole word
  v.token_types.assign(v.tokens.size(), 1);
  v.token_types.back() = 3;
  v.eos = static_cast<int32_t>(v.tokens.size()) - 1;
  return v;
}

std::vector<std::string> pieces(const Tokenizer& t, const std::vector<int32_t>& ids) {
  std::vector<std::string> out;
  for (int32_t id : ids) out.push_back(t.id_to_token(id));
  return out;
}

// tiny_byte_level(pre) with more tokens (byte-level spelling) and merges.
GgufVocab with_tokens(GgufVocab v, const std::vector<std::string>& tokens,
                      const std::vector<std::string>& merges) {
  for (const std::string& t : tokens) {
    v.tokens.push_back(t);
    v.token_types.push_back(1);
  }
  v.merges.insert(v.merges.end(), merges.begin(), merges.end());
  return v;
}

// Tekken (Mistral) and o200k (gpt-4o: Phi-4-mini) splits, as Python's regex module splits with their
// tokenizer.json patterns: "HelloWorld 12345 it's" -> tekken [Hello, World, " ", 1, 2, 3, 4, 5, " it",
// 's], o200k [Hello, World, " ", 123, 45, " it's"]; "éAb" -> [é, Ab] in both (é is lowercase).
TEST(GgufVocab, TekkenAndO200kSplits) {
  const std::string sp = "\xC4\xA0";  // byte-level space
  const std::vector<std::string> extra = {"Hello",    "World",     sp + "i", sp + "it",
                                          sp + "it'", sp + "it's", "'s",     "Ab"};
  const std::vector<std::string> merges = {sp + " i", sp + "i t", sp + "it '", sp + "it' s"};
  GgufVocab tv = with_tokens(tiny_byte_level("tekken"), extra, merges);
  tv.bos = 256;  // any id ("12"): tekken adds BOS by default, as llama.cpp does
  Tokenizer tk = tokenizer_from_gguf(tv);
  // Words that are tokens stay whole (ignore_merges), digits one by one, the contraction apart.
  EXPECT_EQ(pieces(tk, tk.encode("HelloWorld 12345 it's", false)),
            (std::vector<std::string>{"Hello", "World", sp, "1", "2", "3", "4", "5", sp + "it", "'s"}));
  EXPECT_EQ(pieces(tk, tk.encode("\xC3\xA9"
                                 "Ab",
                                 false)),
            (std::vector<std::string>{"\xC3\x83", "\xC2\xA9", "Ab"}));  // é's two bytes, then Ab
  EXPECT_EQ(tk.encode("Ab", true), (std::vector<int32_t>{256, tk.encode("Ab", false)[0]}));
  // o200k: digits in threes, the contraction stays on its word, merges by rank.
  Tokenizer o2 = tokenizer_from_gguf(with_tokens(tiny_byte_level("gpt-4o"), extra, merges));
  EXPECT_EQ(pieces(o2, o2.encode("12345 it's", false)), (std::vector<std::string>{"123", "45", sp + "it's"}));
  // llama 3's split keeps "éAb" and "HelloWorld" whole: no token, so bytes.
  GgufVocab lv = with_tokens(tiny_byte_level("llama-bpe"), extra, merges);
  lv.add_bos = false;
  Tokenizer l3 = tokenizer_from_gguf(lv);
  EXPECT_EQ(pieces(l3, l3.encode("\xC3\xA9"
                                 "Ab",
                                 false)),
            (std::vector<std::string>{"\xC3\x83", "\xC2\xA9", "A", "b"}));
}

// DeepSeek Coder's split: single digits; DeepSeek V3 / Hunyuan's: digits in threes (llama.cpp's lists).
TEST(GgufVocab, DeepSeekSplits) {
  const std::string sp = "\xC4\xA0";
  Tokenizer dc = tokenizer_from_gguf(tiny_byte_level("deepseek-coder"));
  EXPECT_EQ(pieces(dc, dc.encode("12345 ab", false)),
            (std::vector<std::string>{"1", "2", "3", "4", "5", sp + "a", "b"}));
  Tokenizer d3 = tokenizer_from_gguf(tiny_byte_level("deepseek-v3"));
  EXPECT_EQ(pieces(d3, d3.encode("12345 ab", false)), (std::vector<std::string>{"123", "45", sp + "a", "b"}));
}

TEST(GgufVocab, Llama3SplitAndIgnoreMerges) {
  // llama-bpe: digits in threes, and a word that is a vocabulary entry is that token (ignore_merges).
  GgufVocab lv = tiny_byte_level("llama-bpe");
  lv.add_bos = false;
  Tokenizer l3 = tokenizer_from_gguf(lv);
  EXPECT_EQ(pieces(l3, l3.encode("12345 ab", false)), (std::vector<std::string>{"123", "45",
                                                                                "\xC4\xA0"
                                                                                "ab"}));
  EXPECT_EQ(pieces(l3, l3.encode("ab", false)), (std::vector<std::string>{"ab"}));
  // qwen2: one digit per piece, merges only.
  Tokenizer q2 = tokenizer_from_gguf(tiny_byte_level("qwen2"));
  EXPECT_EQ(pieces(q2, q2.encode("12345 ab", false)), (std::vector<std::string>{"1", "2", "3", "4", "5",
                                                                                "\xC4\xA0"
                                                                                "a",
                                                                                "b"}));
  // gpt-2: digits together (merged by rank), no word lookup.
  Tokenizer g2 = tokenizer_from_gguf(tiny_byte_level("gpt-2"));
  EXPECT_EQ(pieces(g2, g2.encode("12345 ab", false)), (std::vector<std::string>{"123", "45",
                                                                                "\xC4\xA0"
                                                                                "a",
                                                                                "b"}));
  // dbrx (OLMo 2's cl100k vocabulary): llama 3's split (digits in threes), merges only.
  Tokenizer db = tokenizer_from_gguf(tiny_byte_level("dbrx"));
  EXPECT_EQ(pieces(db, db.encode("12345 ab", false)), (std::vector<std::string>{"123", "45",
                                                                                "\xC4\xA0"
                                                                                "a",
                                                                                "b"}));
  EXPECT_EQ(pieces(db, db.encode("1234 5", false)), (std::vector<std::string>{"123", "4", "\xC4\xA0", "5"}));
  // default: punctuation runs split off first, digits in threes at the end.
  Tokenizer d = tokenizer_from_gguf(tiny_byte_level("default"));
  EXPECT_EQ(pieces(d, d.encode("a+=12345", false)), (std::vector<std::string>{"a", "+", "=", "123", "45"}));
  // Control tokens are special added tokens: matched in the text, skipped by decode(skip_special).
  std::vector<int32_t> ids = l3.encode("ab<|eot|>ab", false);
  EXPECT_EQ(pieces(l3, ids), (std::vector<std::string>{"ab", "<|eot|>", "ab"}));
  EXPECT_EQ(l3.decode(ids, true), "abab");
  EXPECT_EQ(l3.decode(ids, false), "ab<|eot|>ab");
  EXPECT_EQ(l3.eos_id(), ids[1]);
  // llama-bpe adds BOS by default (as llama.cpp does); without a BOS id that is an error.
  GgufVocab v = tiny_byte_level("llama-bpe");
  EXPECT_THROW(tokenizer_from_gguf(v), Error);
  v.bos = 0;
  EXPECT_EQ(tokenizer_from_gguf(v).encode("ab", true), (std::vector<int32_t>{0, l3.token_to_id("ab")}));
  v.add_bos = false;
  EXPECT_EQ(tokenizer_from_gguf(v).encode("ab", true), (std::vector<int32_t>{l3.token_to_id("ab")}));
}

// A protobuf wire-format reader over b[pos, end).
struct Reader {
  const std::string& b;
  size_t pos, end;
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; pos < end; shift += 7) {
      uint8_t c = static_cast<uint8_t>(b[pos++]);
      v |= static_cast<uint64_t>(c & 0x7F) << shift;
      if (!(c & 0x80)) return v;
    }
    throw std::runtime_error("truncated varint");
  }
  // Calls fn(field, wire_type, reader over a length-delimited value / the varint / fixed32 bits).
  template <typename Fn>
  void each(Fn&& fn) {
    while (pos < end) {
      uint64_t tag = varint();
      int field = static_cast<int>(tag >> 3), wt = static_cast<int>(tag & 7);
      if (wt == 0) {
        fn(field, wt, Reader{b, pos, pos}, varint());
      } else if (wt == 2) {
        size_t len = static_cast<size_t>(varint());
        fn(field, wt, Reader{b, pos, pos + len}, 0);
        pos += len;
      } else if (wt == 5) {
        uint32_t bits;
        std::memcpy(&bits, b.data() + pos, 4);
        fn(field, wt, Reader{b, pos, pos}, bits);
        pos += 4;
      } else if (wt == 1) {
        pos += 8;
      } else {
        throw std::runtime_error("unsupported wire type");
      }
    }
  }
};

// TinyLlama's tokenizer.model (SentencePiece ModelProto) read as llama.cpp's converter reads it:
// pieces (1: piece, 2: score, 3: type) and normalizer_spec.add_dummy_prefix.
GgufVocab vocab_from_sentencepiece(const std::string& path) {
  std::string buf = read_text_file(path);
  GgufVocab v;
  v.model = "llama";
  Reader top{buf, 0, buf.size()};
  top.each([&](int field, int wt, Reader r, uint64_t) {
    if (field == 1 && wt == 2) {
      std::string piece;
      float score = 0;
      int32_t type = 1;
      r.each([&](int f, int w, Reader s, uint64_t x) {
        if (f == 1 && w == 2) piece = buf.substr(s.pos, s.end - s.pos);
        if (f == 2 && w == 5) {
          uint32_t bits = static_cast<uint32_t>(x);
          std::memcpy(&score, &bits, 4);
        }
        if (f == 3 && w == 0) type = static_cast<int32_t>(x);
      });
      v.tokens.push_back(piece);
      v.scores.push_back(score);
      v.token_types.push_back(type);
    } else if (field == 3 && wt == 2) {  // normalizer_spec
      r.each([&](int f, int w, Reader, uint64_t x) {
        if (f == 3 && w == 0) v.add_space_prefix = x != 0;
      });
    }
  });
  v.unk = 0;
  v.bos = 1;
  v.eos = 2;
  return v;
}

TEST(GgufVocab, TinyLlamaSentencePieceMatchesHuggingFaceTokenizer) {
  std::string path = testing::shared_path("tokenizers/tinyllama/tokenizer.model");
  NBITS_REQUIRE_SHARED(path);
  GgufVocab v = vocab_from_sentencepiece(path);
  ASSERT_EQ(v.tokens.size(), 32000u);
  ASSERT_EQ(v.tokens[1], "<s>");
  ASSERT_EQ(v.token_types[1], 3);
  ASSERT_EQ(v.token_types[3], 6);  // <0x00>
  Tokenizer tok = tokenizer_from_gguf(v);
  std::vector<std::string> differing;
  int agree = agree_with_cases(tok, "tinyllama", &differing);
  json doc =
      json::parse(read_text_file(testing::shared_path("tokenizers/cases/tokenizer_cases_tinyllama.json")));
  EXPECT_EQ(agree, static_cast<int>(doc["cases"].size()))
      << "first differing: " << (differing.empty() ? "" : differing[0]);
  EXPECT_EQ(tok.bos_id(), 1);
  EXPECT_EQ(tok.eos_id(), 2);
}

// llama.cpp's own SentencePiece tokenizer (score-driven bigram merges, not merge ranks) on the same
// vocabulary: tests/tokenizer/data/llamacpp_tinyllama.json, made by tools/gguf/make_spm_vocab_gguf.py
// and tools/gguf/llamacpp_token_ref.mjs (node-llama-cpp 3.21.1).
TEST(GgufVocab, TinyLlamaSentencePieceMatchesLlamaCpp) {
  std::string path = testing::shared_path("tokenizers/tinyllama/tokenizer.model");
  NBITS_REQUIRE_SHARED(path);
  Tokenizer tok = tokenizer_from_gguf(vocab_from_sentencepiece(path));
  json ref = json::parse(read_text_file(std::string(nbits::testing::source_dir()) +
                                        "/tests/tokenizer/data/llamacpp_tinyllama.json"));
  int agree = 0, n = 0;
  for (const json& c : ref["cases"]) {
    std::string text = c["text"];
    SCOPED_TRACE(text);
    std::vector<int32_t> ids = tok.encode(text, false);
    EXPECT_EQ(ids, ids_of(c["ids_parse_special"]));
    agree += ids == ids_of(c["ids_parse_special"]);
    ++n;
  }
  EXPECT_GE(n, 60);
  EXPECT_EQ(agree, n);
}

// A small SentencePiece vocabulary: <unk> <s> </s>, 256 byte tokens, then scored pieces.
GgufVocab tiny_spm(bool with_bytes = true) {
  GgufVocab v;
  v.model = "llama";
  auto add = [&](const std::string& t, float score, int32_t type) {
    v.tokens.push_back(t);
    v.scores.push_back(score);
    v.token_types.push_back(type);
  };
  add("<unk>", 0, 2);
  add("<s>", 0, 3);
  add("</s>", 0, 3);
  if (with_bytes)
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      add(name, 0, 6);
    }
  add("\xE2\x96\x81", -1, 1);  // ▁
  add("a", -2, 1);
  add("b", -3, 1);
  add("\xE2\x96\x81"
      "a",
      -0.5f, 1);  // ▁a
  add("ab", -0.8f, 1);
  add("\xE2\x96\x81"
      "ab",
      -0.1f, 1);  // ▁ab
  v.unk = 0;
  v.bos = 1;
  v.eos = 2;
  return v;
}

TEST(GgufVocab, SentencePieceScoresByteFallbackAndSpacePrefix) {
  Tokenizer t = tokenizer_from_gguf(tiny_spm());
  const std::string sp = "\xE2\x96\x81";
  EXPECT_EQ(pieces(t, t.encode("ab", true)), (std::vector<std::string>{"<s>", sp + "ab"}));
  EXPECT_EQ(pieces(t, t.encode("a b", false)), (std::vector<std::string>{sp + "a", sp, "b"}));
  EXPECT_EQ(t.decode(t.encode("a b", true), true), "a b");
  // Byte fallback: a character outside the vocabulary is its UTF-8 bytes.
  std::vector<int32_t> e = t.encode("\xC3\xA9", false);
  EXPECT_EQ(pieces(t, e), (std::vector<std::string>{sp, "<0xC3>", "<0xA9>"}));
  EXPECT_EQ(t.decode(e, false), "\xC3\xA9");
  // Control tokens in text are special added tokens.
  EXPECT_EQ(pieces(t, t.encode("ab</s>", false)), (std::vector<std::string>{sp + "ab", "</s>"}));
  // Without the space prefix.
  GgufVocab nv = tiny_spm();
  nv.add_space_prefix = false;
  nv.add_bos = false;
  Tokenizer n = tokenizer_from_gguf(nv);
  EXPECT_EQ(pieces(n, n.encode("ab a", true)), (std::vector<std::string>{"ab", sp + "a"}));
  EXPECT_EQ(n.decode(n.encode("ab a", true), false), "ab a");
  // add_eos appends EOS.
  GgufVocab ev = tiny_spm();
  ev.add_eos = true;
  EXPECT_EQ(pieces(tokenizer_from_gguf(ev), tokenizer_from_gguf(ev).encode("a", true)),
            (std::vector<std::string>{"<s>", sp + "a", "</s>"}));
  // No byte tokens: an unknown character is <unk>.
  Tokenizer u = tokenizer_from_gguf(tiny_spm(false));
  EXPECT_EQ(pieces(u, u.encode("a\xC3\xA9", false)), (std::vector<std::string>{sp + "a", "<unk>"}));
}

std::string error_of(const GgufVocab& v) {
  try {
    tokenizer_from_gguf(v);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(GgufVocab, UnsupportedOrInconsistentVocabulariesAreRefusedByName) {
  GgufVocab v = tiny_spm();
  v.model = "bert";
  EXPECT_NE(error_of(v).find("unsupported tokenizer.ggml.model 'bert'"), std::string::npos) << error_of(v);
  GgufVocab p = tiny_byte_level("deepseek-llm");
  EXPECT_NE(error_of(p).find("unsupported tokenizer.ggml.pre 'deepseek-llm'"), std::string::npos)
      << error_of(p);
  GgufVocab s = tiny_spm();
  s.scores.clear();
  EXPECT_NE(error_of(s).find("needs tokenizer.ggml.scores"), std::string::npos) << error_of(s);
  GgufVocab ty = tiny_spm();
  ty.token_types.pop_back();
  EXPECT_NE(error_of(ty).find("token_type has"), std::string::npos) << error_of(ty);
  GgufVocab b = tiny_spm();
  b.bos = 100000;
  EXPECT_NE(error_of(b).find("bos_token_id 100000 is out of range"), std::string::npos) << error_of(b);
  GgufVocab d = tiny_spm();
  d.tokens[5] = d.tokens[4];
  EXPECT_NE(error_of(d).find("repeats token 4"), std::string::npos) << error_of(d);
  GgufVocab m = tiny_byte_level("gpt-2");
  m.merges.push_back("zz q");
  EXPECT_NE(error_of(m).find("merge token out of vocabulary"), std::string::npos) << error_of(m);
  GgufVocab nm = tiny_byte_level("gpt-2");
  nm.merges.clear();
  EXPECT_NE(error_of(nm).find("needs tokenizer.ggml.merges"), std::string::npos) << error_of(nm);
  GgufVocab bad = tiny_byte_level("gpt-2");
  bad.tokens.push_back("\xFF");
  bad.token_types.push_back(1);
  EXPECT_NE(error_of(bad).find("not valid UTF-8"), std::string::npos) << error_of(bad);
}

}  // namespace
}  // namespace nbits
