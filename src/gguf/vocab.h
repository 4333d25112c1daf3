// The tokenizer.ggml.* metadata of a GGUF file, as tokenizer_from_gguf()
// (src/tokenizer/gguf_vocab.h) takes it.
#pragma once

#include <cstdint>
#include <vector>

#include "gguf/reader.h"
#include "tokenizer/gguf_vocab.h"

namespace nbits::gguf {

// Reads the keys llama.cpp reads; absent keys stay empty / nullopt. Throws
// "<file>: ..." for a key of the wrong type or an id outside int32.
GgufVocab read_vocab(const File& f);

// The tokens that end a reply, as llama.cpp takes them: the eos / eot / eom ids of the metadata,
// then every token whose text is a known end-of-turn marker (<|im_end|>, <|eot_id|>, <|end|>,
// <end_of_turn>, <|endoftext|>, <|return|>, <|call|>, ...). In gpt-oss's harmony vocabulary
// (<|return|> and <|call|> both there) <|end|> is left out: it closes the analysis message, after
// which the model goes on to its final answer; <|call|> ends a tool call.
std::vector<int64_t> end_of_generation_ids(const File& f);

}  // namespace nbits::gguf
