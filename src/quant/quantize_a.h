// Activation quantization for CompInt8 (accuracy_level 4): the numerics
// contract shared by every kernel (see kernels/matmul_nbits.h).
#pragma once

#include <cstdint>

namespace nbits::quant {

// Quantizes one row a[0..K) in blocks of `block` elements:
//   amax = max|a| over the block's real elements; scale = amax / 127;
//   q = round_half_to_even(a * (amax != 0 ? 127 / amax : 0)), elements past K are 0.
// Writes qa[k_blocks*block] and scales[k_blocks]; if block_sums is non-null also
// block_sums[b] = scale * sum(q in block b) (ORT's ABlkSum).
void quantize_row_blocks(const float* a, int64_t K, int block, int8_t* qa, float* scales,
                         float* block_sums = nullptr);

}  // namespace nbits::quant
