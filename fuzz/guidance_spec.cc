// libFuzzer target: arbitrary JSON schemas, regexes and Lark grammars through the guidance room
// (llguidance): compile (check, make_constraint), then a few steps of allowed() / accept() along
// tokens the input picks. A bad spec must be an nbits::Error, never a crash or a hang (the
// engine's fuel limits bound the work). The vocabulary: a byte-level BPE with all 256 bytes and a
// few JSON-ish merges, built in memory.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "base/error.h"
#include "guidance/guidance.h"
#include "tokenizer/tokenizer.h"

namespace {

// GPT-2's byte-level alphabet: the character standing for byte b, as UTF-8.
std::string byte_char(int b) {
  static int next[256];
  static bool init = false;
  if (!init) {
    int n = 0;
    for (int i = 0; i < 256; ++i) {
      const bool self = (i >= 33 && i <= 126) || (i >= 161 && i <= 172) || (i >= 174 && i <= 255);
      next[i] = self ? i : 256 + n++;
    }
    init = true;
  }
  const int cp = next[b];
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

const nbits::Tokenizer& tokenizer() {
  static const nbits::Tokenizer tok = [] {
    nlohmann::json vocab = nlohmann::json::object();
    for (int b = 0; b < 256; ++b) vocab[byte_char(b)] = b;
    nlohmann::json merges = nlohmann::json::array();
    int id = 256;
    for (const auto& [a, c] :
         {std::pair<int, int>{'{', '"'}, {'"', ':'}, {'t', 'r'}, {'u', 'e'}, {'1', '2'}}) {
      vocab[byte_char(a) + byte_char(c)] = id++;
      merges.push_back(byte_char(a) + " " + byte_char(c));
    }
    const nlohmann::json tj = {
        {"added_tokens", {{{"id", id}, {"content", "<|end|>"}, {"special", true}}}},
        {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}},
        {"decoder", {{"type", "ByteLevel"}}},
        {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}}};
    return nbits::Tokenizer::from_json(tj.dump(), R"({"eos_token": "<|end|>"})");
  }();
  return tok;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  static const std::shared_ptr<const nbits::guidance::Vocabulary> vocab = [] {
    const int32_t eos = tokenizer().vocab_size() - 1;
    return nbits::guidance::make_vocabulary(tokenizer(), tokenizer().vocab_size(),
                                            std::span<const int32_t>(&eos, 1));
  }();
  static const char* kTypes[] = {"json_schema", "json_object", "regex", "lark"};
  const std::string type = kTypes[data[0] % 4];
  const uint8_t picks = data[1];
  const std::string spec_text(reinterpret_cast<const char*>(data + 2), size - 2);
  try {
    const nbits::guidance::Spec spec = nbits::guidance::make_spec(type, spec_text);
    if (!nbits::guidance::check(*vocab, spec).empty()) return 0;
    auto c = nbits::guidance::make_constraint(vocab, spec);
    for (int step = 0; step < 8; ++step) {
      const std::span<const uint32_t> mask = c->allowed();
      // The (picks + step)-th allowed token, wrapping.
      int n = 0;
      for (uint32_t w : mask) n += std::popcount(w);
      if (n == 0) break;
      int want = (picks + step * 7) % n, token = -1;
      for (size_t w = 0; w < mask.size() && token < 0; ++w)
        for (uint32_t bits = mask[w]; bits; bits &= bits - 1)
          if (want-- == 0) {
            token = static_cast<int>(w * 32 + static_cast<size_t>(std::countr_zero(bits)));
            break;
          }
      c->accept(token);
      if (token == tokenizer().vocab_size() - 1) break;  // eos: the reply ended
    }
  } catch (const nbits::Error&) {
  }
  return 0;
}
