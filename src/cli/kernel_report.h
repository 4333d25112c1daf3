// The load-time kernel choice (kernels/kernel_choice.h) as nbits inspect and nbits bench show it:
// per role and packed format, the micro-kernel used and why (the measured times, the cache file,
// or the forced level).
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>

namespace nbits::cli {

// [{"key", "chosen", "why", "candidates": [{"name", "us"}]}] for the choices made so far.
nlohmann::ordered_json kernel_choice_json();
// "kernel choice:" and one indented line per choice; nothing when none was made.
void print_kernel_choices(std::FILE* out);

}  // namespace nbits::cli
