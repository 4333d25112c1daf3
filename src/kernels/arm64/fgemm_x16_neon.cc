// CompFp32 x16 GEMV / GEMM, baseline NEON (FMLA): codes are moved to one int32 lane per column with
// TBL (byte i of each column's dword), converted to fp32 and multiplied by the activations.
// GEMV: per block sum a*q in fp32, then y += scale * (sum - zp * sum(a)); GEMM below 4 rows (4 rows
// x 8 columns): each weight dequantized per tile as (q - zp) * scale, as the reference does; from 4
// rows (fgemm_q{4,8}x16_6x16_neon) the same weights dequantized once for all rows
// (kernels/fgemm_x16_dequant_inl.h).
#include "kernels/arm64/v8_neon_inl.h"
#include "kernels/arm64/x16_neon_inl.h"
#include "kernels/fgemm_x16_dequant_inl.h"

namespace nbits::kernels {
namespace {

using namespace arm64;

// TBL selector: byte i of every dword to its low byte, others zero (index 0xff reads 0).
inline uint8x16_t dword_byte_sel(int i) {
  uint8_t s[16];
  for (int c = 0; c < 4; ++c) {
    s[4 * c] = static_cast<uint8_t>(4 * c + i);
    s[4 * c + 1] = s[4 * c + 2] = s[4 * c + 3] = 0xff;
  }
  return vld1q_u8(s);
}

inline float32x4_t codes_f32(uint8x16_t v, uint8x16_t sel) {
  return vcvtq_f32_u32(vreinterpretq_u32_u8(vqtbl1q_u8(v, sel)));
}

template <int I>
inline float32x4_t fma_lane(float32x4_t e, uint8x16_t v, const uint8x16_t* sel, float32x4_t a) {
  return vfmaq_laneq_f32(e, codes_f32(v, sel[I]), a, I);
}

template <bool kAsym>
inline void zp_f32(const uint8_t* p, int dflt, float32x4_t z[4]) {
  if constexpr (kAsym) {
    int32x4_t zi[4];
    load_zp16(p, zi);
    for (int j = 0; j < 4; ++j) z[j] = vcvtq_f32_s32(zi[j]);
  } else {
    for (int j = 0; j < 4; ++j) z[j] = vdupq_n_f32(static_cast<float>(dflt));
  }
}

// The 8 weights at k offset j of a code group (x: its two 16-byte halves of 4 columns each, one
// half of the panel) as (q - zp) * scale, the reference's expression: wv[c] = columns 4c..4c+3.
template <int kBits>
inline void dequant8(const uint8x16_t* x, int j, const uint8x16_t* sel, uint8x16_t m4, const float32x4_t* z,
                     const float32x4_t* s, float32x4_t* wv) {
  for (int c = 0; c < 2; ++c) {
    uint8x16_t v = x[c];
    if constexpr (kBits == 4) v = j < 4 ? vandq_u8(v, m4) : vshrq_n_u8(v, 4);
    wv[c] = vmulq_f32(vsubq_f32(codes_f32(v, sel[j & 3]), z[c]), s[c]);
  }
}

template <int kBits, bool kAsym, bool kF16>
void gemv(const PackedX16& w, int64_t p0, int64_t p1, const float* a, const float* asum, float* y,
          const float* bias) {
  const uint8x16_t sel[4] = {dword_byte_sel(0), dword_byte_sel(1), dword_byte_sel(2), dword_byte_sel(3)};
  const uint8x16_t m4 = vdupq_n_u8(0x0f);
  const int64_t groups = w.block / (kBits == 4 ? 8 : 4);
  for (int64_t p = p0; p < p1; ++p) {
    const uint8_t* blk = w.panel(p);
    float32x4_t acc[4];
    for (auto& v : acc) v = vdupq_n_f32(0.0f);
    for (int64_t b = 0; b < w.k_blocks; ++b, blk += w.block_stride) {
      const uint8_t* codes = blk + w.header_bytes;
      const float* ab = a + b * w.block;
      float32x4_t e0[4], e1[4];
      for (int j = 0; j < 4; ++j) e0[j] = e1[j] = vdupq_n_f32(0.0f);
      for (int64_t g = 0; g < groups; ++g, codes += 64) {
        if constexpr (kBits == 4) {
          const float32x4_t alo = vld1q_f32(ab + 8 * g), ahi = vld1q_f32(ab + 8 * g + 4);
          for (int j = 0; j < 4; ++j) {
            const uint8x16_t x = vld1q_u8(codes + 16 * j);
            const uint8x16_t lo = vandq_u8(x, m4), hi = vshrq_n_u8(x, 4);
            e0[j] = fma_lane<0>(e0[j], lo, sel, alo);
            e1[j] = fma_lane<0>(e1[j], hi, sel, ahi);
            e0[j] = fma_lane<1>(e0[j], lo, sel, alo);
            e1[j] = fma_lane<1>(e1[j], hi, sel, ahi);
            e0[j] = fma_lane<2>(e0[j], lo, sel, alo);
            e1[j] = fma_lane<2>(e1[j], hi, sel, ahi);
            e0[j] = fma_lane<3>(e0[j], lo, sel, alo);
            e1[j] = fma_lane<3>(e1[j], hi, sel, ahi);
          }
        } else {
          const float32x4_t a4 = vld1q_f32(ab + 4 * g);
          for (int j = 0; j < 4; ++j) {
            const uint8x16_t x = vld1q_u8(codes + 16 * j);
            e0[j] = fma_lane<0>(e0[j], x, sel, a4);
            e1[j] = fma_lane<1>(e1[j], x, sel, a4);
            e0[j] = fma_lane<2>(e0[j], x, sel, a4);
            e1[j] = fma_lane<3>(e1[j], x, sel, a4);
          }
        }
      }
      const float32x4_t as = vdupq_n_f32(asum[b]);
      float32x4_t z[4];
      zp_f32<kAsym>(blk + w.zp_offset, w.default_zp(), z);
      for (int j = 0; j < 4; ++j) {
        const float32x4_t t = vaddq_f32(e0[j], e1[j]);
        acc[j] = vfmaq_f32(acc[j], load_scales4<kF16>(blk, j), vfmsq_f32(t, z[j], as));
      }
    }
    store_cols<4>(y, bias, p * 16, w.N, acc);
  }
}

template <int R, int kBits, bool kAsym, bool kF16>
void tile(const PackedX16& w, int64_t p, int h, const float* A, int64_t lda, float* Y, int64_t ldy,
          const float* bias) {
  const uint8x16_t sel[4] = {dword_byte_sel(0), dword_byte_sel(1), dword_byte_sel(2), dword_byte_sel(3)};
  const uint8x16_t m4 = vdupq_n_u8(0x0f);
  constexpr int kGk = kBits == 4 ? 8 : 4;  // k per code group
  const int64_t groups = w.block / kGk;
  float32x4_t acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = vdupq_n_f32(0.0f);
  const uint8_t* blk = w.panel(p);
  for (int64_t b = 0; b < w.k_blocks; ++b, blk += w.block_stride) {
    const uint8_t* codes = blk + w.header_bytes + 32 * h;
    const float32x4_t s[2] = {load_scales4<kF16>(blk, 2 * h), load_scales4<kF16>(blk, 2 * h + 1)};
    float32x4_t z4[4];
    zp_f32<kAsym>(blk + w.zp_offset, w.default_zp(), z4);
    const float32x4_t z[2] = {z4[2 * h], z4[2 * h + 1]};
    const float* ab = A + b * w.block;
    for (int64_t g = 0; g < groups; ++g, codes += 64, ab += kGk) {
      const uint8x16_t x[2] = {vld1q_u8(codes), vld1q_u8(codes + 16)};
      for (int j = 0; j < kGk; ++j) {
        float32x4_t wv[2];
        dequant8<kBits>(x, j, sel, m4, z, s, wv);
        for (int r = 0; r < R; ++r) {
          const float av = ab[r * lda + j];
          acc[r][0] = vfmaq_n_f32(acc[r][0], wv[0], av);
          acc[r][1] = vfmaq_n_f32(acc[r][1], wv[1], av);
        }
      }
    }
  }
  const int64_t n0 = p * 16 + 8 * h;
  if (n0 >= w.N) return;
  for (int r = 0; r < R; ++r) store_cols<2>(Y + r * ldy, bias, n0, w.N, acc[r]);
}

template <int kBits, bool kAsym, bool kF16>
void gemm(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const float* A, int64_t lda, float* Y,
          int64_t ldy, const float* bias) {
  for_each_tile_4x8(p0, p1, M, [&](int64_t p, int64_t m, int h, auto rows) {
    tile<decltype(rows)::value, kBits, kAsym, kF16>(w, p, h, A + m * lda, lda, Y + m * ldy, ldy, bias);
  });
}

// Blocks [b0, b1) of panel p dequantized into out[(k - b0 * block) * 16 + column].
template <int kBits, bool kAsym, bool kF16>
void neon_dequantize_panel(const PackedX16& w, int64_t p, int64_t b0, int64_t b1, float* out) {
  const uint8x16_t sel[4] = {dword_byte_sel(0), dword_byte_sel(1), dword_byte_sel(2), dword_byte_sel(3)};
  const uint8x16_t m4 = vdupq_n_u8(0x0f);
  constexpr int kGk = kBits == 4 ? 8 : 4;
  const int64_t groups = w.block / kGk;
  const uint8_t* blk = w.panel(p) + b0 * w.block_stride;
  for (int64_t b = b0; b < b1; ++b, blk += w.block_stride) {
    float32x4_t z4[4];
    zp_f32<kAsym>(blk + w.zp_offset, w.default_zp(), z4);
    for (int h = 0; h < 2; ++h) {
      const uint8_t* codes = blk + w.header_bytes + 32 * h;
      const float32x4_t s[2] = {load_scales4<kF16>(blk, 2 * h), load_scales4<kF16>(blk, 2 * h + 1)};
      const float32x4_t z[2] = {z4[2 * h], z4[2 * h + 1]};
      float* o = out + (b - b0) * w.block * 16 + 8 * h;
      for (int64_t g = 0; g < groups; ++g, codes += 64) {
        const uint8x16_t x[2] = {vld1q_u8(codes), vld1q_u8(codes + 16)};
        for (int j = 0; j < kGk; ++j, o += 16) {
          float32x4_t wv[2];
          dequant8<kBits>(x, j, sel, m4, z, s, wv);
          vst1q_f32(o, wv[0]);
          vst1q_f32(o + 4, wv[1]);
        }
      }
    }
  }
}

// The V of kernels/fgemm_x16_dequant_inl.h: 2 V8 (a whole panel, 4 q registers) per tile row, 6
// rows (24 of the 32 registers); below 4 rows the 4x8 GEMM above.
struct DequantGemmV : neon8::F32x8 {
  static constexpr int kTileVecs = 2;
  template <int kBits, bool kAsym, bool kF16>
  static void dequantize_panel(const PackedX16& w, int64_t p, int64_t b0, int64_t b1, float* out) {
    neon_dequantize_panel<kBits, kAsym, kF16>(w, p, b0, b1, out);
  }
  template <int kBits, bool kAsym, bool kF16>
  static void small_gemm(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const float* A, int64_t lda,
                         float* Y, int64_t ldy, const float* bias) {
    gemm<kBits, kAsym, kF16>(w, p0, p1, M, A, lda, Y, ldy, bias);
  }
};

}  // namespace

NBITS_FGEMM_DEQUANT_DEFINE(DequantGemmV, 6x16, neon);

template <bool kAsym, bool kF16>
void fgemv_q4x16_neon(NBITS_A64_FGEMV_ARGS) {
  gemv<4, kAsym, kF16>(w, p0, p1, a, asum, y, bias);
}
template <bool kAsym, bool kF16>
void fgemv_q8x16_neon(NBITS_A64_FGEMV_ARGS) {
  gemv<8, kAsym, kF16>(w, p0, p1, a, asum, y, bias);
}
template <bool kAsym, bool kF16>
void fgemm_q4x16_4x8_neon(NBITS_A64_FGEMM_ARGS) {
  gemm<4, kAsym, kF16>(w, p0, p1, M, A, lda, Y, ldy, bias);
}
template <bool kAsym, bool kF16>
void fgemm_q8x16_4x8_neon(NBITS_A64_FGEMM_ARGS) {
  gemm<8, kAsym, kF16>(w, p0, p1, M, A, lda, Y, ldy, bias);
}

NBITS_A64_INSTANTIATE(fgemv_q4x16_neon, NBITS_A64_FGEMV_ARGS);
NBITS_A64_INSTANTIATE(fgemv_q8x16_neon, NBITS_A64_FGEMV_ARGS);
NBITS_A64_INSTANTIATE(fgemm_q4x16_4x8_neon, NBITS_A64_FGEMM_ARGS);
NBITS_A64_INSTANTIATE(fgemm_q8x16_4x8_neon, NBITS_A64_FGEMM_ARGS);

}  // namespace nbits::kernels
