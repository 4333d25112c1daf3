// Rope scaling as llama.cpp applies it to a GGUF model: the keys read into Hyperparams (YaRN, the
// Llama 4 / mistral3 attention temperature) and the tables the graph holds (cos / sin per position
// and rotary pair, the temperature per position).
#pragma once

#include <cstdint>
#include <vector>

#include "gguf/model_builder.h"
#include "gguf/reader.h"

namespace nbits::gguf {

// YaRN's keys (yarn: rope.scaling.type is "yarn"): rope.scaling.yarn_ext_factor (default 1),
// yarn_beta_fast / yarn_beta_slow (32 / 1), and the magnitude llama.cpp gives cos / sin:
// rope.scaling.attn_factor times get_mscale(factor) = 1 + 0.1 ln(factor), or, with
// rope.scaling.yarn_log_multiplier m (mistral3), get_mscale(factor, 1) / get_mscale(factor, m).
void read_yarn(const File& f, Hyperparams& hp, bool yarn);

// mistral3's attention.temperature_scale (0: off) with the floor rope.scaling.original_context_length
// and offset 0 (llama.cpp's mistral3).
void read_attn_temperature(const File& f, Hyperparams& hp);

// qwen2vl (M-RoPE: contiguous sections) and qwen3vl (interleaved sections) on text, where the
// time, height and width positions are the token's position: rope.dimension_sections (4 counts of
// rotary pairs) only decides which pairs take the 4th position, 0 for text (llama.cpp's
// set_input), so do not rotate (hp.rope_frozen_pairs). Images are not supported.
void read_mrope_text(const File& f, Hyperparams& hp);

struct RopeTables {
  std::vector<float> cos, sin;  // [T, rope_dim / 2]
};

// The tables for positions 0 .. T-1 at rope base `base`: frequency i is base^(-2i/rope_dim) divided
// by factors[i] (LongRoPE / Llama 3; empty: 1); with `scaled`, the model's linear or YaRN scaling
// (sliding-window layers pass false); times rope_attn_factor (or YaRN's magnitude).
RopeTables rope_tables(const Hyperparams& hp, int64_t T, double base, bool scaled,
                       const std::vector<float>& factors);

// The attention temperature of positions 0 .. T-1 (all 1 when it is off or does not start before T).
std::vector<float> attn_temperature(const Hyperparams& hp, int64_t T);

}  // namespace nbits::gguf
