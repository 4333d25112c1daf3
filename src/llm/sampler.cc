#include "llm/sampler.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "base/error.h"

namespace nbits::llm {

namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// Candidate order: larger logit first, then lower id.
bool before(const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}

}  // namespace

void Rng::reseed(uint64_t seed) {
  uint64_t x = seed;
  for (auto& s : s_) s = splitmix64(x);
}

uint64_t Rng::next() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

int32_t argmax(std::span<const float> v) {
  NBITS_ASSERT(!v.empty());
  size_t best = 0;
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] > v[best]) best = i;
  return static_cast<int32_t>(best);
}

Sampler::Sampler(const SamplerOptions& options) : opt_(options), rng_(options.seed) {
  NBITS_CHECK(!(opt_.temperature < 0), "temperature must be >= 0 (got ", opt_.temperature, ")");
  NBITS_CHECK(opt_.top_k >= 0, "top-k must be >= 0 (got ", opt_.top_k, ")");
  NBITS_CHECK(opt_.top_p > 0 && opt_.top_p <= 1, "top-p must be in (0, 1] (got ", opt_.top_p, ")");
  NBITS_CHECK(opt_.min_p >= 0 && opt_.min_p <= 1, "min-p must be in [0, 1] (got ", opt_.min_p, ")");
  NBITS_CHECK(opt_.repetition_penalty > 0, "repetition penalty must be > 0 (got ", opt_.repetition_penalty,
              ")");
  NBITS_CHECK(opt_.presence_penalty >= -2 && opt_.presence_penalty <= 2,
              "presence penalty must be in [-2, 2] (got ", opt_.presence_penalty, ")");
  NBITS_CHECK(opt_.frequency_penalty >= -2 && opt_.frequency_penalty <= 2,
              "frequency penalty must be in [-2, 2] (got ", opt_.frequency_penalty, ")");
  if (opt_.temperature == 0) opt_.greedy = true;
}

void Sampler::apply_penalty(std::span<const float> logits, std::span<const int32_t> history) {
  const size_t V = logits.size();
  work_.resize(V);
  seen_.resize(V, 0);
  std::copy(logits.begin(), logits.end(), work_.begin());
  const float r = opt_.repetition_penalty;
  for (int32_t id : history) {
    if (id < 0 || static_cast<size_t>(id) >= V || seen_[id]) continue;
    seen_[id] = 1;
    float& l = work_[id];
    l = l > 0 ? l / r : l * r;
  }
  for (int32_t id : history)
    if (id >= 0 && static_cast<size_t>(id) < V) seen_[id] = 0;
  if (opt_.presence_penalty != 0.0f || opt_.frequency_penalty != 0.0f)
    for (int32_t id : drawn_ids_)
      if (static_cast<size_t>(id) < V)
        work_[id] -= opt_.frequency_penalty * static_cast<float>(drawn_count_[id]) + opt_.presence_penalty;
  for (const auto& [id, bias] : opt_.logit_bias)
    if (id >= 0 && static_cast<size_t>(id) < V) work_[static_cast<size_t>(id)] += bias;
}

void Sampler::forget_drawn() {
  for (int32_t id : drawn_ids_) drawn_count_[id] = 0;
  drawn_ids_.clear();
}

void Sampler::sort_top(size_t n) {
  std::partial_sort(cand_.begin(), cand_.begin() + static_cast<ptrdiff_t>(n),
                    cand_.begin() + static_cast<ptrdiff_t>(n_cand_), before);
}

void Sampler::allowed_candidates(std::span<const float> l, float inv_t) {
  const std::span<const uint32_t> mask = constraint_->allowed();
  const size_t V = l.size();
  n_cand_ = 0;
  for (size_t w = 0; w < mask.size() && w * 32 < V; ++w)
    for (uint32_t bits = mask[w]; bits != 0; bits &= bits - 1) {
      const size_t id = w * 32 + static_cast<size_t>(std::countr_zero(bits));
      if (id < V) cand_[n_cand_++] = {l[id] * inv_t, static_cast<int32_t>(id)};
    }
  NBITS_CHECK(n_cand_ > 0, "constrained decoding: the grammar allows no token of the ", V,
              "-token vocabulary here");
}

void Sampler::filter(std::span<const float> logits, std::span<const int32_t> history) {
  NBITS_CHECK(!logits.empty(), "sampler: empty logits");
  std::span<const float> l = logits;
  const bool penalties =
      (opt_.repetition_penalty != 1.0f && !history.empty()) ||
      ((opt_.presence_penalty != 0.0f || opt_.frequency_penalty != 0.0f) && !drawn_ids_.empty()) ||
      !opt_.logit_bias.empty();
  if (penalties) {
    apply_penalty(logits, history);
    l = work_;
  }
  const size_t V = l.size();
  cand_.resize(V);
  const float inv_t = opt_.greedy ? 1.0f : 1.0f / opt_.temperature;
  if (constraint_) {
    allowed_candidates(l, inv_t);
    if (opt_.greedy) {
      size_t best = 0;  // ids ascend: the first of equal logits is the lowest id
      for (size_t i = 1; i < n_cand_; ++i)
        if (cand_[i].first > cand_[best].first) best = i;
      cand_[0] = {1.0f, cand_[best].second};
      n_cand_ = 1;
      return;
    }
  } else if (opt_.greedy) {
    cand_[0] = {1.0f, argmax(l)};
    n_cand_ = 1;
    return;
  } else {
    for (size_t i = 0; i < V; ++i) cand_[i] = {l[i] * inv_t, static_cast<int32_t>(i)};
    n_cand_ = V;
  }
  bool permuted = false;
  if (opt_.top_k > 0 && static_cast<size_t>(opt_.top_k) < n_cand_) {
    const auto k = static_cast<ptrdiff_t>(opt_.top_k);
    std::nth_element(cand_.begin(), cand_.begin() + k - 1, cand_.begin() + static_cast<ptrdiff_t>(n_cand_),
                     before);
    n_cand_ = static_cast<size_t>(k);
    permuted = true;
  }
  float max_l = -INFINITY;
  for (size_t i = 0; i < n_cand_; ++i) max_l = std::max(max_l, cand_[i].first);
  if (opt_.top_p < 1.0f) {
    double z = 0;
    for (size_t i = 0; i < n_cand_; ++i) z += std::exp(static_cast<double>(cand_[i].first - max_l));
    const double need = static_cast<double>(opt_.top_p) * z;
    // Sort a growing head of the candidates until it holds the nucleus.
    size_t m = std::min<size_t>(n_cand_, 256);
    for (;;) {
      sort_top(m);
      permuted = true;
      double cum = 0;
      size_t keep = 0;
      while (keep < m && cum < need) cum += std::exp(static_cast<double>(cand_[keep++].first - max_l));
      if (cum >= need || m == n_cand_) {
        n_cand_ = std::max<size_t>(keep, 1);
        break;
      }
      m = std::min(n_cand_, m * 4);
    }
  }
  if (opt_.min_p > 0.0f) {
    const float floor_l = max_l + std::log(opt_.min_p);
    size_t w = 0;
    for (size_t i = 0; i < n_cand_; ++i)
      if (cand_[i].first >= floor_l) cand_[w++] = cand_[i];
    n_cand_ = w;  // the max always survives
  }
  // Canonical order (by id) so the draw does not depend on the std::sort flavour.
  if (permuted)
    std::sort(cand_.begin(), cand_.begin() + static_cast<ptrdiff_t>(n_cand_),
              [](const auto& a, const auto& b) { return a.second < b.second; });
  double z = 0;
  for (size_t i = 0; i < n_cand_; ++i) {
    const float p = std::exp(cand_[i].first - max_l);
    cand_[i].first = p;
    z += p;
  }
  const auto inv_z = static_cast<float>(1.0 / z);
  for (size_t i = 0; i < n_cand_; ++i) cand_[i].first *= inv_z;
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history) {
  filter(logits, history);
  int32_t id = cand_[n_cand_ - 1].second;  // rounding: the mass summed to just under 1
  if (n_cand_ == 1) {
    id = cand_[0].second;
  } else {
    const double u = rng_.uniform();
    double cum = 0;
    for (size_t i = 0; i < n_cand_; ++i) {
      cum += cand_[i].first;
      if (u < cum) {
        id = cand_[i].second;
        break;
      }
    }
  }
  if (opt_.presence_penalty != 0.0f || opt_.frequency_penalty != 0.0f) {
    if (drawn_count_.size() < logits.size()) drawn_count_.resize(logits.size(), 0);
    if (drawn_count_[id]++ == 0) drawn_ids_.push_back(id);
  }
  if (constraint_) constraint_->accept(id);
  return id;
}

void Sampler::probabilities(std::span<const float> logits, std::span<const int32_t> history,
                            std::vector<float>& out) {
  filter(logits, history);
  out.assign(logits.size(), 0.0f);
  for (size_t i = 0; i < n_cand_; ++i) out[cand_[i].second] = cand_[i].first;
}

}  // namespace nbits::llm
