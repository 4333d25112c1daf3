// libFuzzer target: encode + decode + stream-decode arbitrary bytes with a small byte-level BPE
// and a SentencePiece-style tokenizer (built in memory), plus tokenizer.json parsing of the input.
#include "tokenizer/tokenizer.h"

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/error.h"
#include "tokenizer/chat.h"

namespace {

const char* kByteLevel =
    R"({"added_tokens": [{"id": 7, "content": "<|end|>", "special": true, "lstrip": true},
  {"id": 8, "content": "<x>", "special": false, "normalized": true, "rstrip": true}],
  "normalizer": {"type": "NFC"},
  "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex":
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
    "behavior": "Isolated", "invert": false}, {"type": "Digits", "individual_digits": true},
    {"type": "ByteLevel", "add_prefix_space": true, "use_regex": true}]},
  "decoder": {"type": "ByteLevel"},
  "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "Ġ": 3, "Ġab": 4, "Ã": 5, "©": 6},
    "merges": ["a b", "Ġ ab"]}})";

const char* kSentencePiece = R"({"added_tokens": [{"id": 0, "content": "<unk>", "special": true},
  {"id": 1, "content": "<s>", "special": true}],
  "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
    {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
  "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>"}},
    {"Sequence": {"id": "A"}}], "special_tokens": {"<s>": {"id": "<s>", "ids": [1]}}},
  "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
    {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
  "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true,
    "vocab": {"<unk>": 0, "<s>": 1, "<0xC3>": 2, "<0xA9>": 3, "<0x20>": 4, "▁": 5, "a": 6, "▁a": 7},
    "merges": ["▁ a"]}})";

void roundtrip(const nbits::Tokenizer& tok, const std::string& text) {
  for (bool special : {false, true}) {
    std::vector<int32_t> ids = tok.encode(text, special);
    std::string d = tok.decode(ids, false);
    nbits::StreamDecoder sd(tok);
    std::string s;
    for (int32_t id : ids) s += sd.push(id);
    s += sd.flush();
    if (s != d) __builtin_trap();  // streaming must equal decode()
    (void)tok.decode(ids, true);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const nbits::Tokenizer byte_level = nbits::Tokenizer::from_json(kByteLevel);
  static const nbits::Tokenizer sentencepiece = nbits::Tokenizer::from_json(kSentencePiece);
  std::string text(reinterpret_cast<const char*>(data), size);
  roundtrip(byte_level, text);
  roundtrip(sentencepiece, text);
  try {  // the input as a tokenizer.json, and as a chat template
    nbits::Tokenizer t = nbits::Tokenizer::from_json(text);
    roundtrip(t, "Hello wörld 123 <s>");
  } catch (const nbits::Error&) {
  }
  try {
    (void)nbits::render_chat_template(text, {{"user", "hi"}}, true, "<s>", "</s>");
  } catch (const nbits::Error&) {
  }
  return 0;
}
