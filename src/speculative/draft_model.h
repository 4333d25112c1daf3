// A smaller model of the same tokenizer proposes tokens: its greedy continuation, one
// one-token step of the draft model per proposed token. Its KV cache follows the sequence:
// each proposal first drops what the sequence no longer holds (rejected proposals) and runs
// what it does not hold yet (the tokens accepted since).
#pragma once

#include <memory>

#include "llm/generator.h"
#include "speculative/drafter.h"
#include "tokenizer/tokenizer.h"

namespace nbits::speculative {

// Throws unless the draft model's tokenizer is the model's (the same tokens for the same ids).
void check_same_vocabulary(const Tokenizer& model, const Tokenizer& draft);

class DraftModel final : public Drafter {
 public:
  explicit DraftModel(std::unique_ptr<llm::Generator> draft);
  void propose(std::span<const int32_t> context, int64_t max_tokens, std::vector<int32_t>& out) override;
  bool cheap() const override { return false; }
  const char* name() const override { return "draft-model"; }
  double last_catch_up_ms() const override { return catch_up_ms_; }
  llm::Generator& generator() { return *draft_; }

 private:
  std::unique_ptr<llm::Generator> draft_;
  double catch_up_ms_ = 0;
};

}  // namespace nbits::speculative
