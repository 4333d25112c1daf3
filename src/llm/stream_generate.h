// The generate-and-stream loop every front end runs (nbits run, nbits chat, the public
// API, the server): Generator::generate with each token turned into text as it comes.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "llm/generator.h"
#include "llm/sampler.h"
#include "tokenizer/tokenizer.h"

namespace nbits::llm {

struct TextResult {
  GenerateResult generated;
  std::string text;  // the generated tokens' text (every piece handed to on_text)
};

// Appends `ids` and generates up to max_new_tokens (Generator::generate). For each token:
// on_token(id) first (returning false stops, as in Generator::generate), then the text it
// completes goes to on_text (never half a UTF-8 character; empty pieces are not passed). At the
// end the stream is flushed into on_text. stream may be null (no tokenizer: text stays empty);
// it may already hold ids pushed before (an echoed prompt), whose text is not part of `text`.
// `loop` replaces Generator::generate (speculative decoding) when given.
TextResult generate_text(Generator& g, std::span<const int32_t> ids, int64_t max_new_tokens, Sampler& sampler,
                         StreamDecoder* stream, const std::function<void(std::string_view)>& on_text,
                         const std::function<bool(int32_t)>& on_token = {}, const DecodeLoop& loop = {});

}  // namespace nbits::llm
