#include "llm/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "support/alloc_counter.h"

namespace nbits::llm {
namespace {

std::vector<float> log_probs(const std::vector<double>& p) {
  std::vector<float> l;
  for (double v : p) l.push_back(static_cast<float>(std::log(v)));
  return l;
}

SamplerOptions sampling(float temperature = 1.0f) {
  SamplerOptions o;
  o.greedy = false;
  o.temperature = temperature;
  return o;
}

TEST(Sampler, ArgmaxTiesGoToLowestId) {
  EXPECT_EQ(argmax(std::vector<float>{1, 3, 3, 2}), 1);
  Sampler s;
  EXPECT_EQ(s.sample(std::vector<float>{0, 5, 5, 5}, {}), 1);
}

TEST(Sampler, RepetitionPenaltyFollowsHuggingFace) {
  SamplerOptions o;
  o.repetition_penalty = 1.25f;
  Sampler s(o);
  // Positive logit divided: 2.0 -> 1.6 < 1.9.
  EXPECT_EQ(s.sample(std::vector<float>{2.0f, 1.9f}, std::vector<int32_t>{0}), 1);
  // Negative logit multiplied: -1.0 -> -1.25 < -1.1.
  EXPECT_EQ(s.sample(std::vector<float>{-1.0f, -1.1f}, std::vector<int32_t>{0}), 1);
  // Applied once per distinct token, however often it was seen: 2.0 -> 1.6 > 1.5.
  EXPECT_EQ(s.sample(std::vector<float>{2.0f, 1.5f}, std::vector<int32_t>{0, 0, 0, 0}), 0);
  // Out-of-range history ids are ignored.
  EXPECT_EQ(s.sample(std::vector<float>{2.0f, 1.9f}, std::vector<int32_t>{-1, 7}), 0);
}

// OpenAI's penalties count what this sampler drew since forget_drawn(), not the history.
TEST(Sampler, PresenceAndFrequencyPenaltiesCountDrawnTokens) {
  SamplerOptions o;
  o.greedy = true;
  o.frequency_penalty = 0.5f;
  o.presence_penalty = 0.25f;
  Sampler s(o);
  const std::vector<float> logits = {2.0f, 1.5f, 0.0f};
  const std::vector<int32_t> history = {0, 0, 0};  // the prompt: not penalised
  // Draws 0 (2.0); then 0 is at 2 - 0.75 = 1.25 < 1.5: draws 1; then 0 at 1.25, 1 at 0.75: draws 0;
  // then 0 at 2 - 1.25 = 0.75, 1 at 0.75: the tie goes to the lower id.
  std::vector<int32_t> got;
  for (int i = 0; i < 4; ++i) got.push_back(s.sample(logits, history));
  EXPECT_EQ(got, (std::vector<int32_t>{0, 1, 0, 0}));
  s.forget_drawn();
  EXPECT_EQ(s.sample(logits, history), 0);
  std::vector<float> p;
  s.probabilities(logits, history, p);  // greedy: the penalised argmax
  EXPECT_EQ(p[1], 1.0f);
  o.presence_penalty = 3.0f;
  EXPECT_THROW(Sampler{o}, Error);
}

// OpenAI's logit_bias: added after the penalties, greedy and sampled; -100 bans, +100 all but
// forces; ids past the vocabulary are ignored.
TEST(Sampler, LogitBiasShiftsTheLogits) {
  SamplerOptions o;
  o.logit_bias = {{0, -100.0f}, {9, 50.0f}};
  Sampler greedy(o);
  EXPECT_EQ(greedy.sample(std::vector<float>{2.0f, 1.5f, 0.0f}, {}), 1);
  o.logit_bias = {{2, 1.0f}};
  o.repetition_penalty = 2.0f;  // 1.5 -> 0.75 first, then + 0 (token 2: 0 + 1)
  Sampler penalised(o);
  EXPECT_EQ(penalised.sample(std::vector<float>{-5.0f, 1.5f, 0.0f}, std::vector<int32_t>{1}), 2);
  SamplerOptions t = sampling();
  t.logit_bias = {{1, 100.0f}};
  Sampler drawn(t);
  std::vector<float> p;
  drawn.probabilities(std::vector<float>{3.0f, 0.0f, 3.0f}, {}, p);
  EXPECT_GT(p[1], 0.999f);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(drawn.sample(std::vector<float>{3.0f, 0.0f, 3.0f}, {}), 1);
}

TEST(Sampler, TopKKeepsTheKLargestRenormalised) {
  auto o = sampling();
  o.top_k = 2;
  Sampler s(o);
  std::vector<float> probs;
  s.probabilities(log_probs({0.1, 0.4, 0.2, 0.3}), {}, probs);
  EXPECT_FLOAT_EQ(probs[0], 0.0f);
  EXPECT_FLOAT_EQ(probs[2], 0.0f);
  EXPECT_NEAR(probs[1], 0.4 / 0.7, 1e-6);
  EXPECT_NEAR(probs[3], 0.3 / 0.7, 1e-6);
}

TEST(Sampler, TopPKeepsTheMinimalSet) {
  const auto l = log_probs({0.05, 0.5, 0.15, 0.3});
  std::vector<float> probs;
  auto o = sampling();
  o.top_p = 0.75f;  // 0.5 + 0.3 >= 0.75: two tokens
  Sampler(o).probabilities(l, {}, probs);
  EXPECT_EQ(std::count_if(probs.begin(), probs.end(), [](float p) { return p > 0; }), 2);
  EXPECT_NEAR(probs[1], 0.5 / 0.8, 1e-6);
  EXPECT_NEAR(probs[3], 0.3 / 0.8, 1e-6);
  o.top_p = 0.85f;  // needs the 0.15 too
  Sampler(o).probabilities(l, {}, probs);
  EXPECT_EQ(std::count_if(probs.begin(), probs.end(), [](float p) { return p > 0; }), 3);
  EXPECT_EQ(probs[0], 0.0f);
  o.top_p = 0.1f;  // at least one token
  Sampler(o).probabilities(l, {}, probs);
  EXPECT_FLOAT_EQ(probs[1], 1.0f);
}

TEST(Sampler, MinPDropsTokensBelowFractionOfMax) {
  auto o = sampling();
  o.min_p = 0.35f;  // threshold 0.175
  std::vector<float> probs;
  Sampler(o).probabilities(log_probs({0.05, 0.5, 0.15, 0.3}), {}, probs);
  EXPECT_EQ(probs[0], 0.0f);
  EXPECT_EQ(probs[2], 0.0f);
  EXPECT_NEAR(probs[1], 0.5 / 0.8, 1e-6);
}

TEST(Sampler, TemperatureSharpensAndFlattens) {
  std::vector<float> probs;
  Sampler(sampling(2.0f)).probabilities(log_probs({0.8, 0.2}), {}, probs);
  // p^(1/2), renormalised: sqrt(.8) / (sqrt(.8) + sqrt(.2)) = 2/3.
  EXPECT_NEAR(probs[0], 2.0 / 3.0, 1e-6);
  Sampler(sampling(0.5f)).probabilities(log_probs({0.8, 0.2}), {}, probs);
  EXPECT_NEAR(probs[0], 0.64 / 0.68, 1e-6);
}

TEST(Sampler, SeededDrawsAreReproducible) {
  const auto l = log_probs({0.1, 0.2, 0.3, 0.4});
  auto o = sampling();
  o.seed = 42;
  Sampler a(o), b(o);
  o.seed = 43;
  Sampler c(o);
  int differ = 0;
  for (int i = 0; i < 1000; ++i) {
    const int32_t x = a.sample(l, {});
    ASSERT_EQ(x, b.sample(l, {}));
    differ += x != c.sample(l, {});
  }
  EXPECT_GT(differ, 100);
  a.reseed(42);
  b.reseed(42);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(a.sample(l, {}), b.sample(l, {}));
}

TEST(Sampler, FrequenciesMatchTheDistribution) {
  const std::vector<double> p = {0.5, 0.3, 0.15, 0.05};
  auto o = sampling();
  o.seed = 7;
  Sampler s(o);
  std::vector<int> hits(p.size(), 0);
  const int draws = 200000;
  for (int i = 0; i < draws; ++i) hits[static_cast<size_t>(s.sample(log_probs(p), {}))]++;
  for (size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(hits[i] / double(draws), p[i], 0.005) << "token " << i;
}

TEST(Sampler, LargeVocabTopPMatchesFullSort) {
  const size_t V = 151936;
  Rng rng(3);
  std::vector<float> l(V);
  for (auto& v : l) v = static_cast<float>(rng.uniform() * 12.0);
  auto o = sampling(0.7f);
  o.top_p = 0.9f;
  std::vector<float> probs;
  Sampler(o).probabilities(l, {}, probs);
  // Reference: full sort, softmax, minimal prefix with mass >= 0.9.
  std::vector<int32_t> ids(V);
  std::iota(ids.begin(), ids.end(), 0);
  std::sort(ids.begin(), ids.end(),
            [&](int32_t a, int32_t b) { return l[a] > l[b] || (l[a] == l[b] && a < b); });
  double z = 0;
  for (float v : l) z += std::exp((v - l[ids[0]]) / 0.7);
  double cum = 0;
  size_t keep = 0;
  while (cum < 0.9 * z) cum += std::exp((l[ids[keep++]] - l[ids[0]]) / 0.7);
  size_t kept = 0;
  for (float q : probs) kept += q > 0;
  EXPECT_EQ(kept, keep);
  EXPECT_GT(probs[ids[keep - 1]], 0.0f);
  EXPECT_EQ(probs[ids[keep]], 0.0f);
  EXPECT_NEAR(probs[ids[0]], std::exp(0.0) / cum, 1e-6);
}

TEST(Sampler, NoAllocationAfterFirstCall) {
  const size_t V = 50000;
  Rng rng(5);
  std::vector<float> l(V);
  for (auto& v : l) v = static_cast<float>(rng.uniform() * 8.0);
  std::vector<int32_t> history = {1, 5, 9, 100};
  auto o = sampling(0.8f);
  o.top_k = 40;
  o.top_p = 0.9f;
  o.min_p = 0.01f;
  o.repetition_penalty = 1.1f;
  Sampler s(o);
  s.sample(l, history);
  const int64_t before = testing::allocation_count();
  for (int i = 0; i < 20; ++i) s.sample(l, history);
  EXPECT_EQ(testing::allocation_count(), before);
  o.top_k = 0;  // the top-p path without top-k
  Sampler s2(o);
  s2.sample(l, history);
  const int64_t before2 = testing::allocation_count();
  for (int i = 0; i < 20; ++i) s2.sample(l, history);
  EXPECT_EQ(testing::allocation_count(), before2);
}

// A constraint that allows a fixed set of ids and records what it was told.
class FixedConstraint : public TokenConstraint {
 public:
  FixedConstraint(std::vector<int32_t> allowed, size_t vocab) : words_((vocab + 31) / 32, 0) {
    for (int32_t id : allowed) words_[static_cast<size_t>(id) / 32] |= 1u << (id % 32);
  }
  std::span<const uint32_t> allowed() override {
    ++asked;
    return words_;
  }
  void accept(int32_t token) override { accepted.push_back(token); }
  void rollback(int64_t n) override { accepted.resize(accepted.size() - static_cast<size_t>(n)); }
  void forced(int64_t, std::vector<int32_t>& out) override { out.clear(); }
  std::vector<int32_t> accepted;
  int asked = 0;

 private:
  std::vector<uint32_t> words_;
};

TEST(Sampler, ConstraintLimitsEveryModeToTheAllowedTokens) {
  const size_t V = 100;
  std::vector<float> logits(V);
  for (size_t i = 0; i < V; ++i) logits[i] = static_cast<float>(i % 7) * 0.5f;  // id 6 (of the best) first
  const std::vector<int32_t> allowed = {3, 33, 64, 65, 99};
  // Greedy: the best allowed logit (3 % 7 = 3, 33 % 7 = 5, 64 % 7 = 1, 65 % 7 = 2, 99 % 7 = 1) -> 33.
  {
    Sampler s;
    auto c = std::make_shared<FixedConstraint>(allowed, V);
    s.set_constraint(c);
    EXPECT_EQ(s.sample(logits, {}), 33);
    EXPECT_EQ(c->accepted, std::vector<int32_t>{33});
  }
  // Sampling with top-k / top-p / min-p and penalties: only allowed ids, each told to the constraint.
  for (int mode = 0; mode < 4; ++mode) {
    SamplerOptions o = sampling(1.5f);
    o.seed = 7 + static_cast<uint64_t>(mode);
    if (mode == 1) o.top_k = 2;
    if (mode == 2) o.top_p = 0.5f;
    if (mode == 3) {
      o.min_p = 0.2f;
      o.repetition_penalty = 1.3f;
      o.presence_penalty = 0.5f;
    }
    Sampler s(o);
    auto c = std::make_shared<FixedConstraint>(allowed, V);
    s.set_constraint(c);
    std::vector<int32_t> hist = {33, 3};
    std::vector<int> seen(V, 0);
    for (int i = 0; i < 400; ++i) {
      const int32_t id = s.sample(logits, hist);
      ASSERT_NE(std::find(allowed.begin(), allowed.end(), id), allowed.end())
          << "mode " << mode << ": " << id;
      ++seen[static_cast<size_t>(id)];
    }
    EXPECT_EQ(c->accepted.size(), 400u);
    if (mode == 1) {  // top-2 of the allowed: 33 (2.5) and 3 (1.5) only
      EXPECT_GT(seen[33], 0);
      EXPECT_GT(seen[3], 0);
      EXPECT_EQ(seen[33] + seen[3], 400);
    }
    if (mode == 0) {
      EXPECT_GT(seen[99] + seen[64] + seen[65], 0);  // the weak ones are drawn too
    }
  }
  // probabilities(): zero outside the allowed set, summing to one, and nothing accepted.
  {
    Sampler s(sampling());
    auto c = std::make_shared<FixedConstraint>(allowed, V);
    s.set_constraint(c);
    std::vector<float> p;
    s.probabilities(logits, {}, p);
    double sum = 0;
    for (size_t i = 0; i < V; ++i) {
      if (std::find(allowed.begin(), allowed.end(), static_cast<int32_t>(i)) == allowed.end()) {
        EXPECT_EQ(p[i], 0.0f) << i;
      }
      sum += p[i];
    }
    EXPECT_NEAR(sum, 1.0, 1e-5);
    EXPECT_TRUE(c->accepted.empty());
  }
}

TEST(Sampler, ConstraintThatAllowsNothingIsAnError) {
  Sampler s;
  // Ids past the logits do not count: 40 is outside a 32-token vocabulary.
  s.set_constraint(std::make_shared<FixedConstraint>(std::vector<int32_t>{40}, 64));
  try {
    s.sample(std::vector<float>(32, 0.0f), {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("allows no token"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nbits::llm
