// Writes the same random-weight model as make_model() as a GGUF file for
// llama.cpp (Q4_0 for 4 bits, Q8_0 for 8 bits; block 32 as GGUF requires), so the
// peers run identical shapes and the same float weights. Vocabulary: the
// tokenizer.json of MakeModelOptions::tokenizer_from (as a "gpt2" BPE vocab,
// padded to the vocab size), else placeholder tokens: ids are fed directly.
#pragma once

#include <string>

#include "modelgen/make_model.h"

namespace nbits::modelgen {

// Returns the number of bytes written. Throws nbits::Error.
int64_t write_gguf(const MakeModelOptions& opt, const std::string& path);

// ggml's reference quantizers for one row (K a multiple of 32).
void quantize_row_q4_0(const float* x, int64_t K, uint8_t* out);  // 18 bytes per 32 values
void quantize_row_q8_0(const float* x, int64_t K, uint8_t* out);  // 34 bytes per 32 values

}  // namespace nbits::modelgen
