// Constrained output for `nbits run` and `nbits chat`: --json-schema FILE, --json, --regex R,
// --grammar FILE.lark (src/guidance; the sampler draws only what keeps the reply valid), and the
// engine's budgets.
#pragma once

#include <memory>

#include "cli/common.h"
#include "cli/model_setup.h"
#include "guidance/guidance.h"
#include "llm/token_constraint.h"

namespace nbits::cli {

// The constraint flags, and with them the engine's budgets (add_guidance_limit_flags).
void add_guidance_flags(Flags& f);
// --guidance-mask-ms MS and --guidance-grammar-size N (nbits serve has these alone).
void add_guidance_limit_flags(Flags& f);
guidance::Limits guidance_limits(const Flags& f);

class GuidanceFlags {
 public:
  // Reads what the flags ask for (at most one of them) and compiles it once for `m`'s vocabulary,
  // so that a bad schema or grammar is refused before any generation.
  GuidanceFlags(const Flags& f, const ModelSetup& m);
  bool on() const { return vocab_ != nullptr; }
  // A constraint for one reply (null when off).
  std::shared_ptr<llm::TokenConstraint> constraint() const;

 private:
  guidance::Spec spec_;
  std::shared_ptr<const guidance::Vocabulary> vocab_;
};

}  // namespace nbits::cli
