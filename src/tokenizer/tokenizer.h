// Hugging Face tokenizer.json (BPE) tokenizer: byte-level BPE (Qwen2.5, SmolLM2/GPT-2) and
// SentencePiece-style BPE with byte fallback (Llama/TinyLlama), matching the Rust `tokenizers`
// library id for id. Anything a file uses that is not implemented is refused at load.
//
// Invalid UTF-8 input: each maximal invalid subsequence is replaced by U+FFFD before anything
// else (the rule of Rust's String::from_utf8_lossy and JS TextDecoder).
//
//   auto tok = nbits::Tokenizer::load("../shared/tokenizers/qwen2.5");
//   std::vector<int32_t> ids = tok.encode("Hello", /*add_special=*/true);
//   std::string text = tok.decode(ids, /*skip_special=*/false);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nbits {

namespace tok {
struct TokenizerImpl;
}

class Tokenizer {
 public:
  // Loads DIR/tokenizer.json (+ DIR/tokenizer_config.json, DIR/chat_template.jinja when present),
  // or a tokenizer.json path (its directory's tokenizer_config.json is read when present).
  // Throws nbits::Error naming the file and the problem.
  static Tokenizer load(const std::string& dir_or_file);
  // Same from in-memory JSON texts (config may be empty).
  static Tokenizer from_json(std::string_view tokenizer_json, std::string_view config_json = {},
                             const std::string& origin = "tokenizer.json");

  // Text to ids. add_special applies the post-processor (e.g. BOS for Llama).
  std::vector<int32_t> encode(std::string_view text, bool add_special) const;
  // Ids to text; skip_special drops special added tokens. Throws on an id out of range.
  std::string decode(const std::vector<int32_t>& ids, bool skip_special) const;

  // Token string of an id ("" if out of range) and id of a token string (-1 if unknown).
  std::string id_to_token(int32_t id) const;
  int32_t token_to_id(std::string_view token) const;
  // Whether id is a special added token (e.g. <|im_end|>, </s>).
  bool is_special(int32_t id) const;
  // Vocabulary size including added tokens (max id + 1).
  int32_t vocab_size() const;
  // The bytes each id stands for inside a text (index = id; vocab_size() entries): byte-level
  // tokens' bytes (a token may hold part of a UTF-8 character), a <0xNN> token's byte, a
  // SentencePiece piece with its word marker as a space (no leading-space stripping), an added
  // token's content. For engines that walk the vocabulary as bytes (constrained decoding).
  std::vector<std::string> token_bytes() const;

  // From tokenizer_config.json; -1 / "" when absent.
  int32_t bos_id() const;
  int32_t eos_id() const;
  const std::string& bos_token() const;
  const std::string& eos_token() const;
  // Chat template text (tokenizer_config.json's chat_template, else chat_template.jinja); "" if none.
  const std::string& chat_template() const;

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

 private:
  friend class StreamDecoder;
  Tokenizer();
  std::unique_ptr<tok::TokenizerImpl> impl_;
};

// Incremental detokenizer for generation: push ids one at a time and print what comes back.
// Never splits a UTF-8 character: bytes of an incomplete character (byte-level tokens, or a run
// of <0xNN> byte-fallback tokens) are held until they complete. The concatenation of all push()
// results and flush() equals tokenizer.decode(all ids, skip_special).
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special = false);
  ~StreamDecoder();
  // Text that became final with this id (may be empty).
  std::string push(int32_t id);
  // Whatever is still held (incomplete bytes become U+FFFD as decode() would); resets the state.
  std::string flush();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace nbits
