// The 64-byte AMX tile configuration of palette 1 (ldtilecfg's operand): rows and bytes per row
// of each of the 8 tiles. Shared by the AMX GEMM (qgemm_x16_amx.cc) and the AMX benchmarks.
#pragma once

#include <cstdint>

namespace nbits::kernels {

struct alignas(64) AmxTileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(AmxTileConfig) == 64);

}  // namespace nbits::kernels
