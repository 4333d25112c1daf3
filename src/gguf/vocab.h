// The tokenizer.ggml.* metadata of a GGUF file, as tokenizer_from_gguf()
// (src/tokenizer/gguf_vocab.h) takes it.
#pragma once

#include "gguf/reader.h"
#include "tokenizer/gguf_vocab.h"

namespace nbits::gguf {

// Reads the keys llama.cpp reads; absent keys stay empty / nullopt. Throws
// "<file>: ..." for a key of the wrong type or an id outside int32.
GgufVocab read_vocab(const File& f);

}  // namespace nbits::gguf
