// How many tokens to draft next: the length that maximises the expected tokens per
// millisecond, from the measured acceptance rate and a cost model t(k) = t0 + slope * k fitted
// to the measured steps (t0: a plain step; slope: what each drafted token adds, from every timed
// verify step whatever its length). Length 0 is plain decode, so speculation that does not pay
// switches itself off (and, with a cheap drafter, back on when the drafts start matching again).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace nbits::speculative {

class DraftLength {
 public:
  // min_draft > 0 keeps every draft at least that long (min_draft == max_draft: a fixed length,
  // for measurements and tests).
  explicit DraftLength(int64_t max_draft, int64_t min_draft = 0);
  int64_t max_draft() const { return max_draft_; }
  // The draft length to try next, in [min_draft, max_draft].
  int64_t next() const;
  // A step that drafted `drafted` tokens (0: plain decode) of which `accepted` (a prefix) were
  // the model's own, and took `ms` (drafting and the model's step).
  void record_step(int64_t drafted, int64_t accepted, double ms);
  // Acceptance evidence only (a cheap drafter's proposal checked against a plain step's token).
  void record_acceptance(int64_t drafted, int64_t accepted);
  // The measured step time with k drafted tokens (a smoothed average), 0 when not measured.
  double measured_ms(int64_t k) const {
    return k >= 0 && k <= max_draft_ ? ms_[static_cast<size_t>(k)] : 0.0;
  }
  // Per-token acceptance estimate in (0, 1).
  double acceptance() const;
  // Expected model tokens per step with k drafted tokens at acceptance a: 1 + a + ... + a^k.
  static double expected_tokens(double a, int64_t k);

 private:
  int64_t best() const;             // the adaptive choice, before min_draft
  double step_ms(int64_t k) const;  // the cost model
  int64_t max_draft_, min_draft_;
  double hits_ = 0, trials_ = 0;  // decayed per-token acceptance counts
  int64_t steps_ = 0;
  double slope_ = 0;           // ms per drafted token (EMA over timed verify steps; 0 = none yet)
  std::vector<int64_t> seen_;  // by draft length: steps recorded
  std::vector<double> ms_;     // by draft length: EMA of the step time (0 = not yet measured)
};

}  // namespace nbits::speculative
