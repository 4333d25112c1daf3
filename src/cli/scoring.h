// Log-probabilities from raw logits, shared by `nbits perplexity` and `nbits run --logprobs`:
// log-softmax in double precision of the logits as the model gives them (no sampling transform).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace nbits::cli {

// log(sum(exp(logits))), computed around the maximum.
double log_sum_exp(std::span<const float> logits);

struct TokenLogprob {
  int32_t id;
  double logprob;
};

// The k most likely tokens (ties: lower id first), most likely first; lse = log_sum_exp(logits).
std::vector<TokenLogprob> top_logprobs(std::span<const float> logits, int64_t k, double lse);

// "1,2,3", or "@FILE" holding ids separated by commas and/or whitespace. Throws nbits::Error
// naming `what` (the flag) on a malformed list, an empty one, or an id outside [0, 2^31).
std::vector<int32_t> parse_id_list(const std::string& spec, const std::string& what);

}  // namespace nbits::cli
