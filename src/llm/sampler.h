// Token sampler: greedy or temperature / top-k / top-p / min-p sampling with
// Hugging Face-style repetition penalty, from a seeded, portable RNG.
// Order (as in HF generate): repetition penalty, temperature, top-k, top-p,
// min-p, then one draw. Buffers are reused: no allocation after the first call.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "llm/token_constraint.h"

namespace nbits::llm {

struct SamplerOptions {
  bool greedy = true;               // argmax (ties -> lowest id); ignores the knobs below
  float temperature = 1.0f;         // > 0; 0 means greedy
  int64_t top_k = 0;                // 0 = off
  float top_p = 1.0f;               // 1 = off; keeps the smallest set with mass >= top_p
  float min_p = 0.0f;               // 0 = off; keeps p >= min_p * p_max
  float repetition_penalty = 1.0f;  // 1 = off; applies to greedy too
  // OpenAI's penalties over the tokens this sampler has drawn since forget_drawn():
  // logit -= frequency_penalty * count + presence_penalty * (count > 0). 0 = off.
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  // OpenAI's logit_bias: added to a token's logit after the penalties, for greedy too (-100 bans a
  // token, +100 all but forces it). Ids past the vocabulary are ignored.
  std::vector<std::pair<int32_t, float>> logit_bias;
  uint64_t seed = 0;
};

// splitmix64-seeded xoshiro256**: identical sequences on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed = 0) { reseed(seed); }
  void reseed(uint64_t seed);
  uint64_t next();
  double uniform();  // [0, 1), 53 random bits

 private:
  uint64_t s_[4];
};

class Sampler {
 public:
  explicit Sampler(const SamplerOptions& options = {});

  // Picks the next token from `logits` (one row of the vocabulary). `history`
  // holds the tokens the repetition penalty applies to (prompt + generated).
  int32_t sample(std::span<const float> logits, std::span<const int32_t> history);
  // Starts a new reply: the presence/frequency penalties count from here.
  void forget_drawn();

  // Probabilities after every filter (0 for removed tokens), for tests and
  // tools; same pipeline as sample() without the draw.
  void probabilities(std::span<const float> logits, std::span<const int32_t> history,
                     std::vector<float>& out);

  const SamplerOptions& options() const { return opt_; }
  void reseed(uint64_t seed) { rng_.reseed(seed); }
  // Where the random stream stands, and the way back to it: a speculative step that drew
  // further than its caller takes restores the state after the last token taken.
  const Rng& rng() const { return rng_; }
  void restore_rng(const Rng& r) { rng_ = r; }
  // Draws only among the tokens `c` allows (after the penalties, before temperature and the
  // filters), and tells it each token sample() draws. Null: no constraint.
  void set_constraint(std::shared_ptr<TokenConstraint> c) { constraint_ = std::move(c); }
  const std::shared_ptr<TokenConstraint>& constraint() const { return constraint_; }

 private:
  // Fills cand_ with the surviving (id, prob) pairs, probs normalised.
  void filter(std::span<const float> logits, std::span<const int32_t> history);
  void apply_penalty(std::span<const float> logits, std::span<const int32_t> history);
  void sort_top(size_t n);  // cand_[0..n) sorted by logit desc, id asc
  // cand_ = the tokens the constraint allows, (logit * inv_t, id) in id order.
  void allowed_candidates(std::span<const float> l, float inv_t);

  SamplerOptions opt_;
  Rng rng_;
  std::vector<float> work_;                      // penalised logits
  std::vector<uint8_t> seen_;                    // history marks for the penalty
  std::vector<std::pair<float, int32_t>> cand_;  // (logit or prob, id)
  std::vector<uint32_t> drawn_count_;            // by id, since forget_drawn()
  std::vector<int32_t> drawn_ids_;               // the ids with a count
  size_t n_cand_ = 0;
  std::shared_ptr<TokenConstraint> constraint_;
};

// Index of the largest value; ties go to the lowest index.
int32_t argmax(std::span<const float> v);

}  // namespace nbits::llm
