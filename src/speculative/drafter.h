// Drafters propose the tokens that may come next; a verify step of the real model then keeps
// the ones it would have produced itself (speculative/speculative_decode.h). A drafter never
// changes what is generated, only how many tokens one pass over the weights yields.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace nbits::speculative {

class Drafter {
 public:
  virtual ~Drafter() = default;
  // Proposes up to max_tokens ids that may follow `context` (every token of the sequence so
  // far, the last one included) into `out` (cleared first). May propose none.
  virtual void propose(std::span<const int32_t> context, int64_t max_tokens, std::vector<int32_t>& out) = 0;
  // True when propose() costs next to nothing (no model run): its proposal can then be checked
  // against every plain decode step too, which keeps the acceptance estimate current while
  // speculation is off.
  virtual bool cheap() const = 0;
  virtual const char* name() const = 0;
  // Milliseconds the last propose() spent catching up: running context it did not hold yet (the
  // prompt, the tokens made while speculation was off) rather than drafting. A cost once per
  // catch-up, not per drafted token, so the draft length's cost model leaves it out.
  virtual double last_catch_up_ms() const { return 0.0; }
};

// Proposes nothing: a SpeculativeDecoder over it (max_draft 0) verifies only the tokens the
// sampler's constraint forces (constrained decoding's fast-forward), plain steps otherwise.
class NoDrafts final : public Drafter {
 public:
  void propose(std::span<const int32_t>, int64_t, std::vector<int32_t>& out) override { out.clear(); }
  bool cheap() const override { return true; }
  const char* name() const override { return "forced tokens only"; }
};

}  // namespace nbits::speculative
