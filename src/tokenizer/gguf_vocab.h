// The tokenizer of a GGUF file: what its tokenizer.ggml.* metadata holds, turned into the same
// Tokenizer that tokenizer.json files load into (one BPE implementation for both).
//
//   model "gpt2"  (byte-level BPE): tokens + merges, split by the regexes llama.cpp uses for
//                 tokenizer.ggml.pre ("default", "gpt-2", "smollm", "qwen2", "llama-bpe", ...);
//   model "llama" (SentencePiece): tokens + scores; merges derived from the scores as Hugging Face
//                 converts a SentencePiece model (a pair's rank is its merged piece's score), byte
//                 fallback through the <0xXX> tokens, "▁" for spaces, add_space_prefix.
// Control (3) and unknown (2) tokens are matched in text as special added tokens, user-defined (4)
// as non-special added tokens, as tokenizer.json's added_tokens are. Anything else (another model,
// an unknown pre-tokenizer name) is refused with an nbits::Error naming it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace nbits {

struct GgufVocab {    // what tokenizer.ggml.* metadata of a GGUF file holds
  std::string model;  // tokenizer.ggml.model: "gpt2" (byte-level BPE), "llama" (SentencePiece), ...
  std::string pre;    // tokenizer.ggml.pre: "smollm", "qwen2", "llama-bpe", "default", ... ("" = default)
  std::vector<std::string> tokens;
  std::vector<float> scores;  // may be empty (gpt2); required for "llama"
  std::vector<int32_t>
      token_types;  // may be empty; 1 normal 2 unknown 3 control 4 user-defined 5 unused 6 byte
  std::vector<std::string> merges;  // "a b" (gpt2)
  std::optional<int32_t> bos, eos, unk, pad;
  std::optional<bool> add_bos, add_eos, add_space_prefix;
  std::string chat_template;  // tokenizer.chat_template
};

// Throws nbits::Error naming an unsupported model/pre or an inconsistent vocabulary.
// The chat template, BOS and EOS are those of the vocab (Tokenizer::chat_template(), bos_id(), ...).
Tokenizer tokenizer_from_gguf(const GgufVocab& v);

}  // namespace nbits
