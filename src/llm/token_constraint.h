// The seam between sampling and constrained decoding (src/guidance): a TokenConstraint says which
// tokens may come next, and hears which one was drawn. The Sampler draws only among the allowed
// tokens; the constraint may compute its next mask in the background while the model runs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

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
  // Takes back the last n tokens accept()ed (a speculative step drew further than its caller
  // took). Throws nbits::Error when the engine cannot.
  virtual void rollback(int64_t n) = 0;
  // The tokens the spec forces next (text it allows in one way only, in the tokenizer's own
  // tokenization), at most max_tokens, into out (cleared first); none when the next token is a
  // choice. A proposal for a verify step: decoding still draws every token from allowed().
  virtual void forced(int64_t max_tokens, std::vector<int32_t>& out) = 0;
};

}  // namespace nbits::llm
