// A reply's token logprobs as OpenAI returns them: chat completions' {"content": [{token, logprob,
// bytes, top_logprobs: [{token, logprob, bytes}]}]}, completions' {tokens, token_logprobs,
// top_logprobs: [{token: logprob}], text_offset}. Each from the raw logits the token was drawn from
// (log-softmax before any sampling transform, llm/logprobs.h), as llama-server and OpenAI give them.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

namespace nbits::serve {

class TokenLogprobs {
 public:
  // text(prev, id): how token `id` reads after token `prev` (a SentencePiece word start keeps its
  // space there), for the alternatives.
  TokenLogprobs(int top, std::function<std::string(int32_t, int32_t)> text)
      : top_(top), text_(std::move(text)) {}
  // Token `id`, drawn from `logits` after token `prev`; `piece`: the text the reply gained with it
  // (the chosen tokens' pieces join to the reply's text).
  void add(std::span<const float> logits, int32_t prev, int32_t id, std::string piece);
  size_t size() const { return entries_.size(); }
  // The entries [from, size()) in the endpoint's form (chat: {"content": [...]}, else the
  // completions object); text_offset counts from the reply's start.
  nlohmann::json to_json(bool chat, size_t from = 0) const;

 private:
  struct Alt {
    std::string text;
    double logprob;
  };
  struct Entry {
    Alt chosen;
    std::vector<Alt> top;
    size_t offset;  // bytes of the reply's text before it
  };
  int top_;
  std::function<std::string(int32_t, int32_t)> text_;
  std::vector<Entry> entries_;
  size_t offset_ = 0;
};

}  // namespace nbits::serve
