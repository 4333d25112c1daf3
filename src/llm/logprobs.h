// Log-probabilities from raw logits, for `nbits perplexity`, `nbits run --logprobs` and the
// server's `logprobs`: log-softmax in double precision of the logits as the model gives them (no
// sampling transform).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace nbits::llm {

// log(sum(exp(logits))), computed around the maximum.
double log_sum_exp(std::span<const float> logits);

struct TokenLogprob {
  int32_t id;
  double logprob;
};

// The k most likely tokens (ties: lower id first), most likely first; lse = log_sum_exp(logits).
std::vector<TokenLogprob> top_logprobs(std::span<const float> logits, int64_t k, double lse);

}  // namespace nbits::llm
