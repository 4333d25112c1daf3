// Inline NEON helpers shared by the arm64 x16 micro-kernels (baseline ARMv8-A; include only from
// src/kernels/arm64/*.cc). One int32 / fp32 lane per output column, 4 columns per register.
#pragma once

#include <arm_neon.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/arm64/x16_arm64.h"

namespace nbits::kernels::arm64 {

// Scales of columns 4j..4j+3 of the block at `blk` as floats (fp16 widened exactly by FCVTL).
template <bool kF16>
inline float32x4_t load_scales4(const uint8_t* blk, int j) {
  if constexpr (kF16) {
    uint16_t h[4];
    std::memcpy(h, blk + 8 * j, 8);
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(h)));
  } else {
    float s[4];
    std::memcpy(s, blk + 16 * j, 16);
    return vld1q_f32(s);
  }
}

// The 16 zero points of a block widened to int32, 4 columns per register.
inline void load_zp16(const uint8_t* p, int32x4_t z[4]) {
  const uint8x16_t b = vld1q_u8(p);
  const uint16x8_t lo = vmovl_u8(vget_low_u8(b)), hi = vmovl_u8(vget_high_u8(b));
  z[0] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(lo)));
  z[1] = vreinterpretq_s32_u32(vmovl_u16(vget_high_u16(lo)));
  z[2] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(hi)));
  z[3] = vreinterpretq_s32_u32(vmovl_u16(vget_high_u16(hi)));
}

// dot - (zp - offset) * qsum for 4 columns, where the dot was taken against codes minus `offset`;
// zp is the packed one (kAsym, `z`) or dflt_zp.
template <bool kAsym>
inline int32x4_t correct(int32x4_t d, int32x4_t z, int dflt_zp, int offset, int32_t qsum) {
  if constexpr (kAsym) {
    return vmlsq_s32(d, vsubq_s32(z, vdupq_n_s32(offset)), vdupq_n_s32(qsum));
  } else {
    const int zz = dflt_zp - offset;
    return zz == 0 ? d : vsubq_s32(d, vdupq_n_s32(zz * qsum));
  }
}

// acc + float(dot) * s, with s = sa * scale computed by the caller in that order: the reference's
// exact operations (the empty asm keeps a compiler from contracting the multiply-add into FMLA).
inline float32x4_t accumulate_s(float32x4_t acc, int32x4_t dot, float32x4_t s) {
  float32x4_t prod = vmulq_f32(vcvtq_f32_s32(dot), s);
  __asm__("" : "+w"(prod));
  return vaddq_f32(acc, prod);
}

inline float32x4_t accumulate(float32x4_t acc, int32x4_t dot, float sa, float32x4_t scales) {
  return accumulate_s(acc, dot, vmulq_f32(vdupq_n_f32(sa), scales));
}

// Stores `cnt` (<= 4) columns of v (+ bias) at y.
inline void store4(float* y, float32x4_t v, const float* bias, int64_t cnt) {
  if (cnt >= 4) {
    if (bias != nullptr) v = vaddq_f32(v, vld1q_f32(bias));
    vst1q_f32(y, v);
    return;
  }
  float t[4];
  vst1q_f32(t, v);
  for (int64_t c = 0; c < cnt; ++c) y[c] = bias != nullptr ? t[c] + bias[c] : t[c];
}

// Stores columns [n0, min(N, n0 + 4 * Q)) of v[0..Q) (+ bias) into y (indexed by column).
template <int Q>
inline void store_cols(float* y, const float* bias, int64_t n0, int64_t N, const float32x4_t* v) {
  for (int j = 0; j < Q; ++j) {
    const int64_t c0 = n0 + 4 * j;
    if (c0 >= N) return;
    store4(y + c0, v[j], bias != nullptr ? bias + c0 : nullptr, std::min<int64_t>(4, N - c0));
  }
}

// The 4x8 GEMM tiling: for panels [p0, p1), rows in tiles of up to 4 and the two 8-column halves
// h of each panel, calls tile(p, m, h, rows) with `rows` a std::integral_constant<int, 1..4>.
template <typename Tile>
inline void for_each_tile_4x8(int64_t p0, int64_t p1, int64_t M, Tile&& tile) {
  for (int64_t p = p0; p < p1; ++p)
    for (int64_t m = 0; m < M; m += 4)
      for (int h = 0; h < 2; ++h) switch (std::min<int64_t>(4, M - m)) {
          case 4:
            tile(p, m, h, std::integral_constant<int, 4>{});
            break;
          case 3:
            tile(p, m, h, std::integral_constant<int, 3>{});
            break;
          case 2:
            tile(p, m, h, std::integral_constant<int, 2>{});
            break;
          default:
            tile(p, m, h, std::integral_constant<int, 1>{});
            break;
        }
}

}  // namespace nbits::kernels::arm64
