// Prompt lookup: the drafter that needs no second model. The last n tokens of the sequence
// (n from max_ngram down to min_ngram) are looked up in the sequence before them (prompt and
// text so far); the tokens that followed their latest earlier occurrence are the proposal.
// Pays where text repeats: code edits, extraction and summaries quoting the prompt, JSON keys.
#pragma once

#include "speculative/drafter.h"

namespace nbits::speculative {

class PromptLookup final : public Drafter {
 public:
  // 1 <= min_ngram <= max_ngram; throws otherwise.
  PromptLookup(int64_t min_ngram = 2, int64_t max_ngram = 4);
  void propose(std::span<const int32_t> context, int64_t max_tokens, std::vector<int32_t>& out) override;
  bool cheap() const override { return true; }
  const char* name() const override { return "prompt-lookup"; }

 private:
  int64_t min_ngram_, max_ngram_;
};

}  // namespace nbits::speculative
