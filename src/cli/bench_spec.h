// `nbits bench --spec lookup|draft`: plain against speculative greedy decoding of one prompt, side
// by side in alternating rounds per thread count: decode ms/token of each (drafting and verify
// steps included), the speed-up, the acceptance, tokens per model step, and whether the ids are
// plain decoding's (they must be).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/session.h"

namespace nbits::cli {

struct SpecBenchOptions {
  std::string model;        // a model folder or .gguf file (with a tokenizer)
  std::string spec;         // "lookup" | "draft"
  std::string draft_model;  // spec == "draft"
  int64_t draft_max = 8;
  std::vector<int> threads = {1, 2};
  std::string prompt;  // a user message (through the chat template when the model has one)
  int64_t decode = 128;
  int reps = 2;
  graph::SessionOptions session;  // threads set per run
  bool json = false;
};

// The prompt used when none is given: a short function and an edit request (text the answer
// repeats, where prompt lookup pays).
const char* default_spec_bench_prompt();

// Prints the table (or one JSON object); returns 1 when the ids of a speculative run differ
// from plain decoding's, else 0.
int run_spec_bench(const SpecBenchOptions& o);

}  // namespace nbits::cli
