#include "llm/logprobs.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace nbits::llm {

double log_sum_exp(std::span<const float> logits) {
  NBITS_CHECK(!logits.empty(), "log_sum_exp of no logits");
  float mx = logits[0];
  for (float x : logits) mx = std::max(mx, x);
  double sum = 0;
  for (float x : logits) sum += std::exp(static_cast<double>(x) - mx);
  return mx + std::log(sum);
}

std::vector<TokenLogprob> top_logprobs(std::span<const float> logits, int64_t k, double lse) {
  const auto n = static_cast<int64_t>(logits.size());
  k = std::clamp<int64_t>(k, 0, n);
  std::vector<int32_t> idx(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) idx[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  auto better = [&](int32_t a, int32_t b) {
    const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
    return la != lb ? la > lb : a < b;
  };
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), better);
  std::vector<TokenLogprob> out;
  out.reserve(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) {
    const int32_t id = idx[static_cast<size_t>(i)];
    out.push_back({id, static_cast<double>(logits[static_cast<size_t>(id)]) - lse});
  }
  return out;
}

}  // namespace nbits::llm
