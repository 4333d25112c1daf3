// What `nbits perplexity` and `nbits run --logprobs` share: the log-probabilities (llm/logprobs.h)
// and the id lists of --teacher-force.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "llm/logprobs.h"

namespace nbits::cli {

using llm::log_sum_exp;
using llm::TokenLogprob;
using llm::top_logprobs;

// "1,2,3", or "@FILE" holding ids separated by commas and/or whitespace. Throws nbits::Error
// naming `what` (the flag) on a malformed list, an empty one, or an id outside [0, 2^31).
std::vector<int32_t> parse_id_list(const std::string& spec, const std::string& what);

}  // namespace nbits::cli
