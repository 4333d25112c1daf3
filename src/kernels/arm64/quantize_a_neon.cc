// CompInt8 activation quantization with NEON: the same float operations as
// quant::quantize_row_blocks (max |a|, amax/127, 127/amax, round half to even: FCVTNS), so qa and
// scales are bit-identical; also returns integer block sums.
#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/arm64/x16_arm64.h"

namespace nbits::kernels {

void quantize_row_blocks_neon(const float* a, int64_t K, int block, int8_t* qa, float* sa, int32_t* qsum) {
  const int64_t kb = (K + block - 1) / block;
  const int32x4_t lim = vdupq_n_s32(127), nlim = vdupq_n_s32(-127);
  for (int64_t b = 0; b < kb; ++b) {
    const float* x = a + b * block;
    int8_t* q = qa + b * block;
    const int64_t n = std::min<int64_t>(block, K - b * block);
    float32x4_t vmax = vdupq_n_f32(0.0f);
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) vmax = vmaxq_f32(vmax, vabsq_f32(vld1q_f32(x + j)));
    float amax = vmaxvq_f32(vmax);
    for (int64_t t = j; t < n; ++t) amax = std::max(amax, std::fabs(x[t]));
    const float scale = amax / 127.0f;
    const float inv = amax != 0.0f ? 127.0f / amax : 0.0f;
    const float32x4_t vinv = vdupq_n_f32(inv);
    int32x4_t vsum = vdupq_n_s32(0);
    for (j = 0; j + 8 <= n; j += 8) {
      const int32x4_t i0 = vminq_s32(vmaxq_s32(vcvtnq_s32_f32(vmulq_f32(vld1q_f32(x + j), vinv)), nlim), lim);
      const int32x4_t i1 =
          vminq_s32(vmaxq_s32(vcvtnq_s32_f32(vmulq_f32(vld1q_f32(x + j + 4), vinv)), nlim), lim);
      vsum = vaddq_s32(vsum, vaddq_s32(i0, i1));
      const int16x8_t p16 = vcombine_s16(vmovn_s32(i0), vmovn_s32(i1));
      vst1_s8(q + j, vmovn_s16(p16));
    }
    int32_t sum = vaddvq_s32(vsum);
    for (; j < n; ++j) {
      const int32_t v = std::clamp(static_cast<int32_t>(std::nearbyint(x[j] * inv)), -127, 127);
      q[j] = static_cast<int8_t>(v);
      sum += v;
    }
    if (n < block) std::memset(q + n, 0, static_cast<size_t>(block - n));
    sa[b] = scale;
    qsum[b] = sum;
  }
}

}  // namespace nbits::kernels
