// Speculative decoding with exact verification: a drafter proposes tokens, one verify step of
// the model runs the pending token and the proposal together (llm::Generator::verify: every
// row the bits of one-token decode), and the tokens are then drawn from those rows exactly as
// plain decode draws them, one Sampler::sample per token, stopping at the first that differs
// from the proposal. A drafter's proposal is a single sequence (a point mass), for which
// "draw from p, keep the draft while they agree" is the Leviathan / Chen acceptance rule: the
// output is the model's distribution, and with the same seed the very tokens plain decode
// gives (greedy or sampled). The rejected tail is dropped from the KV cache (Generator::keep).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "llm/generator.h"
#include "llm/sampler.h"
#include "speculative/draft_length.h"
#include "speculative/drafter.h"

namespace nbits::speculative {

struct SpeculativeStats {
  int64_t steps = 0;         // model steps after the first token (verify or plain)
  int64_t verify_steps = 0;  // of which verify steps (a proposal was made)
  int64_t drafted = 0;       // proposed tokens run by verify steps
  int64_t accepted = 0;      // of those, the model's own
  int64_t forced = 0;        // tokens the sampler's constraint forced, run in verify steps (not in drafted)
  int64_t forced_kept = 0;   // of those, drawn as forced (a different tokenization is not)
  double acceptance() const { return drafted > 0 ? static_cast<double>(accepted) / drafted : 0.0; }
};

class SpeculativeDecoder {
 public:
  // max_draft: the longest proposal (the draft length adapts below it; 0 = no drafts);
  // min_draft: the shortest (DraftLength). Whatever the drafter, the tokens the sampler's
  // constraint forces (TokenConstraint::forced: guidance's fast-forward) lead each proposal,
  // unless fast_forward is false (then they are drawn as any other token).
  SpeculativeDecoder(Drafter& drafter, int64_t max_draft, int64_t min_draft = 0, bool fast_forward = true);

  // Generator::generate's contract (the same tokens, stop reasons, pending token and cache),
  // faster where the drafts are accepted. A generator whose graph cannot verify exactly
  // (!Generator::batchable(): attention outside GroupQueryAttention) decodes plainly.
  llm::GenerateResult generate(llm::Generator& g, std::span<const int32_t> new_ids, int64_t max_new_tokens,
                               llm::Sampler& sampler, const std::function<bool(int32_t)>& on_token = {});

  // The step generate() repeats, for callers that hand tokens out one at a time (the public
  // Generator's generate_next_token). From g's pending token (drawn and handed out, not yet
  // run): drafts up to min(draft length, max_tokens - 1) tokens, runs them with the pending one
  // in one verify pass (a plain step when there is no draft) and draws the 1..k+1 tokens that
  // follow, passing each to emit(token, cached) in order (cached: the tokens before it in the
  // sequence) until emit returns false. The last token emitted is left pending and the ones
  // before it cached, as plain decode leaves them. Returns false when emit stopped the step.
  using Emit = std::function<bool(int32_t token, int64_t cached)>;
  bool step(llm::Generator& g, llm::Sampler& sampler, int64_t max_tokens, const Emit& emit);

  const SpeculativeStats& stats() const { return stats_; }
  const DraftLength& draft_length() const { return length_; }
  const Drafter& drafter() const { return drafter_; }

 private:
  Drafter& drafter_;
  DraftLength length_;
  SpeculativeStats stats_;
  bool fast_forward_;
  std::vector<int32_t> context_, draft_, rows_, forced_;
};

}  // namespace nbits::speculative
