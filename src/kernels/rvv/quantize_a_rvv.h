// CompInt8 activation quantization with RVV, bit-exact with quant::quantize_row_blocks.
#pragma once

#include <cstdint>

namespace nbits::kernels::rvv {

// Like quant::quantize_row_blocks (scale = amax/127, q = round-half-even(a * 127/amax), clamp
// to +-127, zero past K) and also sums[b] = sum of the int8 codes of block b (exact).
void quantize_row_blocks_rvv(const float* a, int64_t K, int block, int8_t* qa, float* scales, int32_t* sums);

}  // namespace nbits::kernels::rvv
