// The seam between sampling and constrained decoding (src/guidance): a TokenConstraint says which
// tokens may come next, and hears which one was drawn. The Sampler draws only among the allowed
// tokens; the constraint may compute its next mask in the background while the model runs.
#pragma once

#include <cstdint>
#include <span>

namespace nbits::llm {

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  // The tokens allowed next: bit (t % 32) of word t / 32 is set when token t may come. Ids past
  // the words given are not allowed. Waits for the mask the last accept() started; valid until
  // the next accept(). Throws nbits::Error when the constraint failed (its engine's message).
  virtual std::span<const uint32_t> allowed() = 0;
  // The token drawn from allowed(): the constraint advances past it.
  virtual void accept(int32_t token) = 0;
};

}  // namespace nbits::llm
