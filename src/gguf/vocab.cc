#include "gguf/vocab.h"

#include <cstdint>
#include <limits>

namespace nbits::gguf {

GgufVocab read_vocab(const File& f) {
  GgufVocab v;
  v.model = f.get_string("tokenizer.ggml.model").value_or("");
  v.pre = f.get_string("tokenizer.ggml.pre").value_or("");
  if (const auto* t = f.get_strings("tokenizer.ggml.tokens")) v.tokens = *t;
  if (const auto* m = f.get_strings("tokenizer.ggml.merges")) v.merges = *m;
  for (double s : f.get_floats("tokenizer.ggml.scores")) v.scores.push_back(static_cast<float>(s));
  auto int32_of = [&](const char* key, int64_t x) {
    if (x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max())
      f.fail(std::string("metadata '") + key + "' holds " + std::to_string(x) + ", outside int32");
    return static_cast<int32_t>(x);
  };
  for (int64_t t : f.get_ints("tokenizer.ggml.token_type"))
    v.token_types.push_back(int32_of("tokenizer.ggml.token_type", t));
  auto id = [&](const char* key) -> std::optional<int32_t> {
    if (const auto x = f.get_int(key)) return int32_of(key, *x);
    return std::nullopt;
  };
  v.bos = id("tokenizer.ggml.bos_token_id");
  v.eos = id("tokenizer.ggml.eos_token_id");
  v.unk = id("tokenizer.ggml.unknown_token_id");
  v.pad = id("tokenizer.ggml.padding_token_id");
  v.add_bos = f.get_bool("tokenizer.ggml.add_bos_token");
  v.add_eos = f.get_bool("tokenizer.ggml.add_eos_token");
  v.add_space_prefix = f.get_bool("tokenizer.ggml.add_space_prefix");
  v.chat_template = f.get_string("tokenizer.chat_template").value_or("");
  return v;
}

}  // namespace nbits::gguf
