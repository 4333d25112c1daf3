#include "speculative/draft_length.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace nbits::speculative {
namespace {
constexpr double kDecay = 0.93;      // acceptance memory: about the last 14 drafted tokens
constexpr double kEma = 0.25;        // step-time smoothing
constexpr int64_t kProbe = 48;       // steps between probes while speculation is off
constexpr double kPriorSlope = 0.1;  // an unmeasured k costs (1 + 0.1 k) plain steps until measured
}  // namespace

DraftLength::DraftLength(int64_t max_draft, int64_t min_draft)
    : max_draft_(max_draft),
      min_draft_(min_draft),
      seen_(static_cast<size_t>(std::max<int64_t>(max_draft, 0)) + 1, 0),
      ms_(static_cast<size_t>(std::max<int64_t>(max_draft, 0)) + 1, 0.0) {
  NBITS_CHECK(max_draft >= 0 && max_draft <= 64, "draft length must be in [0, 64], got ", max_draft);
  NBITS_CHECK(min_draft >= 0 && min_draft <= max_draft, "the shortest draft (", min_draft,
              ") must be in [0, the longest (", max_draft, ")]");
  // A prior of 2 accepted out of 3: the first drafts are tried.
  hits_ = 2;
  trials_ = 3;
}

double DraftLength::acceptance() const { return std::clamp(hits_ / trials_, 0.01, 0.99); }

double DraftLength::expected_tokens(double a, int64_t k) {
  return (1.0 - std::pow(a, static_cast<double>(k + 1))) / (1.0 - a);
}

void DraftLength::record_acceptance(int64_t drafted, int64_t accepted) {
  if (drafted <= 0) return;
  // accepted successes, then one failure unless every draft was accepted.
  const int64_t events = accepted + (accepted < drafted ? 1 : 0);
  for (int64_t i = 0; i < events; ++i) {
    hits_ = hits_ * kDecay + (i < accepted ? 1.0 : 0.0);
    trials_ = trials_ * kDecay + 1.0;
  }
}

void DraftLength::record_step(int64_t drafted, int64_t accepted, double ms) {
  NBITS_CHECK(drafted >= 0 && drafted <= max_draft_ && accepted >= 0 && accepted <= drafted,
              "draft length: bad step record (drafted ", drafted, ", accepted ", accepted, ")");
  record_acceptance(drafted, accepted);
  ++steps_;
  // The first step of each length is not timed: it grows the session's buffers for its rows
  // (stories260K: 54 ms against 0.6 ms after), which would rule that length out for good.
  if (seen_[static_cast<size_t>(drafted)]++ == 0) return;
  double& m = ms_[static_cast<size_t>(drafted)];
  m = m == 0 ? ms : (1 - kEma) * m + kEma * ms;
  if (drafted > 0 && ms_[0] > 0) {
    const double s = std::max(0.0, ms - ms_[0]) / static_cast<double>(drafted);
    slope_ = slope_ == 0 ? s : (1 - kEma) * slope_ + kEma * s;
  }
}

double DraftLength::step_ms(int64_t k) const {
  // A length measured before costs what it measured: verify rows are not equally priced (on AMD
  // Zen4 a 6-row step of the 1.5B cost 2.5x a plain one and a 9-row step 5x, two row tiles), so a
  // line through the plain step and the mean slope chose 8 drafted tokens where 5 paid more.
  if (k > 0 && ms_[static_cast<size_t>(k)] > 0) return ms_[static_cast<size_t>(k)];
  const double base = ms_[0] > 0 ? ms_[0] : 1.0;
  // No verify step timed yet: the prior (each drafted token a tenth of a plain step).
  const double slope = slope_ > 0 ? slope_ : kPriorSlope * base;
  return base + slope * static_cast<double>(k);
}

int64_t DraftLength::next() const { return std::max(min_draft_, best()); }

int64_t DraftLength::best() const {
  // A verify step measured but no plain one: measure the plain step once (a drafter that always
  // proposes never makes one), or every cost would be guessed from the prior.
  if (ms_[0] <= 0)
    for (int64_t k = 1; k <= max_draft_; ++k)
      if (seen_[static_cast<size_t>(k)] > 0) return 0;
  const double a = acceptance();
  // No verify step timed yet: one drafted token at a time until one is (a long draft priced by
  // the prior can cost many plain steps where each row costs nearly one).
  const int64_t longest = slope_ > 0 ? max_draft_ : std::min<int64_t>(max_draft_, 1);
  int64_t best = 0;
  double best_rate = 0;
  for (int64_t k = 0; k <= longest; ++k) {
    const double rate = expected_tokens(a, k) / step_ms(k);
    if (rate > best_rate) {
      best_rate = rate;
      best = k;
    }
  }
  // Speculation off: every kProbe-th step drafts one token anyway, so a slope measured while the
  // machine was busy (another process, a worker woken late) is measured again (the cost: one
  // 2-row step in kProbe, ~2-4% where speculation never pays).
  if (best == 0 && max_draft_ > 0 && a > 0.2 && steps_ % kProbe == kProbe - 1) return 1;
  return best;
}

}  // namespace nbits::speculative
