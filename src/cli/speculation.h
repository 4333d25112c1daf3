// Speculative decoding for `nbits run` and `nbits chat`: --spec lookup (prompt lookup, no second
// model) or --spec draft --draft-model FILE (a smaller model of the same tokenizer), --draft-max N.
#pragma once

#include <cstdio>
#include <memory>

#include "cli/common.h"
#include "cli/model_setup.h"
#include "llm/generator.h"
#include "speculative/drafter.h"
#include "speculative/speculative_decode.h"

namespace nbits::cli {

void add_speculation_flags(Flags& f);

class Speculation {
 public:
  // What the flags ask for; nothing (loop() empty) without --spec / --draft-model, unless
  // fast_forward (constrained output): then the tokens the constraint forces run in verify
  // steps. Loads the draft model and refuses one whose vocabulary differs from `m`'s.
  Speculation(const Flags& f, const ModelSetup& m, bool fast_forward = false);
  bool on() const { return decoder_ != nullptr; }
  // For llm::generate_text: the speculative loop, or empty (plain decode).
  llm::DecodeLoop loop();
  // One line: drafter, verify steps, acceptance, tokens per model step.
  void print_stats(FILE* out) const;
  // The JSON fields of the same ("" when off): ,"speculative":{...}
  std::string json() const;

 private:
  ModelSetup draft_;  // --draft-model
  std::unique_ptr<speculative::Drafter> drafter_;
  std::unique_ptr<speculative::SpeculativeDecoder> decoder_;
};

}  // namespace nbits::cli
