#include "quant/quantize_a.h"

#include <algorithm>
#include <cmath>

namespace nbits::quant {

void quantize_row_blocks(const float* a, int64_t K, int block, int8_t* qa, float* scales, float* block_sums) {
  const int64_t k_blocks = (K + block - 1) / block;
  for (int64_t b = 0; b < k_blocks; ++b) {
    const int64_t k0 = b * block;
    const int64_t k1 = std::min<int64_t>(K, k0 + block);
    float amax = 0.0f;
    for (int64_t k = k0; k < k1; ++k) amax = std::max(amax, std::fabs(a[k]));
    const float scale = amax / 127.0f;
    const float inv = amax != 0.0f ? 127.0f / amax : 0.0f;
    int32_t sum = 0;
    for (int64_t k = k0; k < k0 + block; ++k) {
      int32_t q = 0;
      if (k < k1) {
        // nearbyint uses the current rounding mode: round half to even by default.
        q = static_cast<int32_t>(std::nearbyint(a[k] * inv));
        q = std::clamp(q, -127, 127);
      }
      qa[k] = static_cast<int8_t>(q);
      sum += q;
    }
    scales[b] = scale;
    if (block_sums != nullptr) block_sums[b] = scale * static_cast<float>(sum);
  }
}

}  // namespace nbits::quant
