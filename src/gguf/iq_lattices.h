// The lattices of ggml's IQ1_S / IQ1_M, IQ2_XXS / IQ2_XS / IQ2_S and IQ3_XXS / IQ3_S types: tables
// of points (8 or 4 values each) that ggml chose and that no rule derives. They are ggml's data, so
// they are not in the tree: cmake/room_gguf.cmake writes them at configure time from gguf-py (PyPI
// `gguf`, tools/gguf/gen_iq_lattices.py). A build configured without gguf-py links
// src/gguf/lattices/none.cc and refuses these types by name.
#pragma once

#include <cstdint>

namespace nbits::gguf {

struct IqLattices {
  const int8_t (*iq2xxs)[8];  // 256 points
  const int8_t (*iq2xs)[8];   // 512
  const int8_t (*iq2s)[8];    // 1024
  const int8_t (*iq3xxs)[4];  // 256
  const int8_t (*iq3s)[4];    // 512
  const int8_t (*iq1s)[8];    // 2048, IQ1_S and IQ1_M
  const char* source;         // "gguf-py 0.19.0"
};

// nullptr when this build has no lattices.
const IqLattices* iq_lattices();

}  // namespace nbits::gguf
