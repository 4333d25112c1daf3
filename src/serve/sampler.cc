#include "serve/sampler.h"

#include <algorithm>
#include <cmath>

namespace nbits::serve {

namespace {
// Larger logit first, then lower id.
bool before(const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}
}  // namespace

TokenSampler::TokenSampler(const SamplingParams& params, int64_t vocab_size) : p_(params), rng_(params.seed) {
  const auto v = static_cast<size_t>(std::max<int64_t>(vocab_size, 0));
  count_.assign(v, 0);
  seen_.assign(v, 0);
}

void TokenSampler::observe_prompt(std::span<const int32_t> ids) {
  if (p_.repetition_penalty == 1.0f) return;
  for (int32_t id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= seen_.size() || seen_[static_cast<size_t>(id)]) continue;
    seen_[static_cast<size_t>(id)] = 1;
    seen_ids_.push_back(id);
  }
}

void TokenSampler::accept(int32_t id) {
  if (id < 0 || static_cast<size_t>(id) >= count_.size()) return;
  const auto i = static_cast<size_t>(id);
  if (count_[i]++ == 0) counted_ids_.push_back(id);
  if (p_.repetition_penalty != 1.0f && !seen_[i]) {
    seen_[i] = 1;
    seen_ids_.push_back(id);
  }
}

int32_t TokenSampler::sample(std::span<const float> logits) {
  const size_t V = logits.size();
  std::span<const float> l = logits;
  const bool penalize =
      p_.repetition_penalty != 1.0f || p_.presence_penalty != 0.0f || p_.frequency_penalty != 0.0f;
  if (penalize) {
    work_.assign(logits.begin(), logits.end());
    if (p_.repetition_penalty != 1.0f)
      for (int32_t id : seen_ids_) {
        if (static_cast<size_t>(id) >= V) continue;
        float& x = work_[static_cast<size_t>(id)];
        x = x > 0 ? x / p_.repetition_penalty : x * p_.repetition_penalty;
      }
    for (int32_t id : counted_ids_) {
      if (static_cast<size_t>(id) >= V) continue;
      const auto c = static_cast<float>(count_[static_cast<size_t>(id)]);
      work_[static_cast<size_t>(id)] -= p_.frequency_penalty * c + p_.presence_penalty;
    }
    l = work_;
  }
  if (p_.temperature == 0.0f || p_.top_k == 1) {
    size_t best = 0;
    for (size_t i = 1; i < V; ++i)
      if (l[i] > l[best]) best = i;
    return static_cast<int32_t>(best);
  }
  const float inv_t = 1.0f / p_.temperature;
  cand_.resize(V);
  for (size_t i = 0; i < V; ++i) cand_[i] = {l[i] * inv_t, static_cast<int32_t>(i)};
  size_t n = V;
  if (p_.top_k > 0 && static_cast<size_t>(p_.top_k) < V) {
    n = static_cast<size_t>(p_.top_k);
    std::nth_element(cand_.begin(), cand_.begin() + static_cast<ptrdiff_t>(n - 1), cand_.end(), before);
  }
  std::sort(cand_.begin(), cand_.begin() + static_cast<ptrdiff_t>(n), before);
  const float max_l = cand_[0].first;
  double z = 0;
  for (size_t i = 0; i < n; ++i) z += std::exp(static_cast<double>(cand_[i].first - max_l));
  if (p_.top_p < 1.0f) {
    const double need = static_cast<double>(p_.top_p) * z;
    double cum = 0;
    size_t keep = 0;
    while (keep < n && cum < need) cum += std::exp(static_cast<double>(cand_[keep++].first - max_l));
    n = std::max<size_t>(keep, 1);
  }
  if (p_.min_p > 0.0f) {
    const float floor_l = max_l + std::log(p_.min_p);
    size_t keep = 1;  // sorted: the max always survives
    while (keep < n && cand_[keep].first >= floor_l) ++keep;
    n = keep;
  }
  z = 0;
  for (size_t i = 0; i < n; ++i) z += std::exp(static_cast<double>(cand_[i].first - max_l));
  const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng_) * z;
  double cum = 0;
  for (size_t i = 0; i < n; ++i) {
    cum += std::exp(static_cast<double>(cand_[i].first - max_l));
    if (u < cum) return cand_[i].second;
  }
  return cand_[n - 1].second;
}

}  // namespace nbits::serve
