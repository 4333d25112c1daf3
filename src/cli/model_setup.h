// Shared by `nbits run` and `nbits chat`: the model/sampling flags, loading a
// model folder (generator + tokenizer), and the --profile table.
#pragma once

#include <cstdio>
#include <memory>

#include "cli/common.h"
#include "graph/session.h"
#include "llm/generator.h"
#include "tokenizer/tokenizer.h"

namespace nbits::cli {

struct ModelSetup {
  std::unique_ptr<llm::Generator> generator;
  std::unique_ptr<Tokenizer> tokenizer;  // null when the folder has none (and none was needed)
};

// -m, -t, --accuracy-level, --scales, --ctx, --profile.
void add_model_flags(Flags& f);
// -n, --temp, --top-k, --top-p, --min-p, --repeat-penalty, --seed.
void add_sampling_flags(Flags& f, int64_t default_n = 128);

// Loads the folder named by -m (a model.onnx path selects its folder).
ModelSetup load_model_setup(const Flags& f, bool need_tokenizer);
// The same for another model (a draft model) with -m's session flags.
ModelSetup load_model_setup(const Flags& f, const std::string& path, bool need_tokenizer);
// The session options the model flags give.
graph::SessionOptions session_options(const Flags& f);

// A quantized model whose float MatMul weights (packed at load) exceed its quantized ones: the
// tied fp32 lm_head of onnx-community model_q4.onnx files, which then sets the decode speed. Prints
// one line to `out` pointing at --requantize-float and returns true; false (nothing printed) else.
bool float_weights_note(const graph::Session& session, FILE* out);

// Sampling: greedy unless sampling is on (--temp > 0 given, or the config's
// search.do_sample when --temp is absent); knobs default to the config's.
llm::SamplerOptions sampling_options(const Flags& f, const llm::GenaiConfig& config);

// Per op type, per node (the slowest), and per kernel path.
void print_profile(const graph::Session& session, FILE* out);

}  // namespace nbits::cli
