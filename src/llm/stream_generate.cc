#include "llm/stream_generate.h"

namespace nbits::llm {

TextResult generate_text(Generator& g, std::span<const int32_t> ids, int64_t max_new_tokens, Sampler& sampler,
                         StreamDecoder* stream, const std::function<void(std::string_view)>& on_text,
                         const std::function<bool(int32_t)>& on_token, const DecodeLoop& loop) {
  TextResult r;
  auto emit = [&](const std::string& piece) {
    if (piece.empty()) return;
    r.text += piece;
    if (on_text) on_text(piece);
  };
  const std::function<bool(int32_t)> each = [&](int32_t id) {
    const bool go_on = !on_token || on_token(id);
    if (stream) emit(stream->push(id));
    return go_on;
  };
  r.generated =
      loop ? loop(g, ids, max_new_tokens, sampler, each) : g.generate(ids, max_new_tokens, sampler, each);
  if (stream) emit(stream->flush());
  return r;
}

}  // namespace nbits::llm
