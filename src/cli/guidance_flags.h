// Constrained output for `nbits run` and `nbits chat`: --json-schema FILE, --json, --regex R,
// --grammar FILE.lark (src/guidance; the sampler draws only what keeps the reply valid).
#pragma once

#include <memory>

#include "cli/common.h"
#include "cli/model_setup.h"
#include "guidance/guidance.h"
#include "llm/token_constraint.h"

namespace nbits::cli {

void add_guidance_flags(Flags& f);

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
