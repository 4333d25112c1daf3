// Per-request sampling from a Generator's logits, so every request of a long-lived
// slot can carry its own temperature, top-k/p, min-p, seed and penalties.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

namespace nbits::serve {

struct SamplingParams {
  float temperature = 1.0f;  // 0 = greedy (argmax, lowest id on ties)
  int64_t top_k = 0;         // 0 = off
  float top_p = 1.0f;
  float min_p = 0.0f;
  float repetition_penalty = 1.0f;  // HF: over prompt and generated tokens
  float presence_penalty = 0.0f;    // OpenAI: over generated tokens
  float frequency_penalty = 0.0f;
  uint64_t seed = 0;
};

class TokenSampler {
 public:
  TokenSampler(const SamplingParams& params, int64_t vocab_size);
  // The prompt's tokens (for the repetition penalty).
  void observe_prompt(std::span<const int32_t> ids);
  // Picks the next token from `logits`; then call accept() with what was kept.
  int32_t sample(std::span<const float> logits);
  void accept(int32_t id);

 private:
  SamplingParams p_;
  std::mt19937_64 rng_;
  std::vector<uint32_t> count_;  // generated occurrences per id
  std::vector<uint8_t> seen_;    // in prompt or generated
  std::vector<int32_t> seen_ids_, counted_ids_;
  std::vector<float> work_;
  std::vector<std::pair<float, int32_t>> cand_;
};

}  // namespace nbits::serve
