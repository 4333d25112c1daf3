#include "gguf/vocab.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>
#include <string_view>

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

std::vector<int64_t> end_of_generation_ids(const File& f) {
  std::vector<int64_t> ids;
  const auto add = [&](int64_t id) {
    if (id >= 0 && std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  };
  for (const char* k :
       {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"})
    if (const auto e = f.get_int(k)) add(*e);
  const std::vector<std::string>* tokens = f.get_strings("tokenizer.ggml.tokens");
  if (tokens == nullptr) return ids;
  // llama.cpp's list (llama-vocab.cpp), the markers of the model families nbits runs.
  static constexpr std::string_view kEnds[] = {
      "<|eot_id|>",         "<|im_end|>",           "<|end|>", "<|return|>", "<|call|>", "<end_of_turn>",
      "<|endoftext|>",      "<|eom_id|>",           "<EOT>",   "_<EOT>",     "[EOT]",    "<|end_of_text|>",
      "<end_of_utterance>", "<｜end▁of▁sentence｜>"};
  int64_t end = -1;
  bool has_return = false, has_call = false;
  for (size_t i = 0; i < tokens->size(); ++i) {
    const std::string& t = (*tokens)[i];
    if (std::find(std::begin(kEnds), std::end(kEnds), t) == std::end(kEnds)) continue;
    add(static_cast<int64_t>(i));
    if (t == "<|end|>") end = static_cast<int64_t>(i);
    has_return = has_return || t == "<|return|>";
    has_call = has_call || t == "<|call|>";
  }
  if (has_return && has_call && end >= 0) ids.erase(std::find(ids.begin(), ids.end(), end));
  return ids;
}

}  // namespace nbits::gguf
