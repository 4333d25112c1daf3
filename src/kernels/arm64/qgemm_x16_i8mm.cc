// CompInt8 x16 GEMM (M >= 2) with SMMLA (i8mm: Neoverse V1/V2/N2, Cortex-A710+, Apple M2+).
// SMMLA multiplies a 2x8 int8 tile of A (two rows, 8 k) by an 8x2 tile of B (two columns, 8 k each)
// into a 2x2 int32 tile. The x16 panels hold, per 64-byte code group, one dword per column: for
// int4 the low nibbles are k 8g..8g+3 and the high nibbles k 8g+4..8g+7, so ZIP1/ZIP2 (32-bit) of
// the unpacked low and high nibbles of columns c..c+3 are exactly SMMLA's tiles for columns (c,
// c+1) and (c+2, c+3); for int8, ZIP1/ZIP2 of groups g and g+1 (k 4g..4g+7). The packed format is
// therefore the x16 one (no second copy of the weights; one ZIP per B tile, shared by both row
// pairs). Tiles: 2 row pairs x 4 column pairs = 4 rows x 8 columns; an odd last row is computed
// twice and stored once. Results are bit-exact to the scalar reference as for the SDOT kernels.
#include "kernels/arm64/x16_neon_inl.h"

namespace nbits::kernels {
namespace {

using namespace arm64;

// Scales / zero points of the columns of column pair c (0..3) of half h, laid out as the 2x2 tile:
// [c0, c1, c0, c1].
inline float32x4_t pair_lanes(float32x4_t v, int c) {
  const float32x2_t x = (c & 1) == 0 ? vget_low_f32(v) : vget_high_f32(v);
  return vcombine_f32(x, x);
}
inline int32x4_t pair_lanes(int32x4_t v, int c) {
  const int32x2_t x = (c & 1) == 0 ? vget_low_s32(v) : vget_high_s32(v);
  return vcombine_s32(x, x);
}

// kLut (kBits 4): the nibbles index the weight's lut4 table of code - 128 (one TBL per 16).
template <int R, int kBits, bool kLut, bool kAsym, bool kF16>
void tile(const PackedX16& w, int64_t p, int h, const int8_t* qa, const float* sa, const int32_t* qsum,
          float* Y, int64_t ldy, const float* bias) {
  constexpr int P = (R + 1) / 2;
  constexpr int kDflt = kBits == 4 && !kLut ? 8 : 128, kOff = kBits == 4 && !kLut ? 0 : 128;
  const int64_t kp = w.k_blocks * w.block, kb = w.k_blocks;
  int rows[2 * P];
  for (int i = 0; i < 2 * P; ++i) rows[i] = i < R ? i : R - 1;
  float32x4_t acc[P][4];
  for (int pr = 0; pr < P; ++pr)
    for (int c = 0; c < 4; ++c) acc[pr][c] = vdupq_n_f32(0.0f);
  const uint8_t* blk = w.panel(p);
  const uint8x16_t m4 = vdupq_n_u8(0x0f), sign = vdupq_n_u8(0x80);
  [[maybe_unused]] const int8x16_t table = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(w.lut), sign));
  const auto lookup = [&](uint8x16_t idx) {
    if constexpr (kLut) return vreinterpretq_u8_s8(vqtbl1q_s8(table, idx));
    return idx;
  };
  for (int64_t b = 0; b < w.k_blocks; ++b, blk += w.block_stride) {
    const uint8_t* codes = blk + w.header_bytes + 32 * h;
    int32x4_t d[P][4];
    for (int pr = 0; pr < P; ++pr)
      for (int c = 0; c < 4; ++c) d[pr][c] = vdupq_n_s32(0);
    // One step = 8 k: one group for int4, two for int8.
    const int64_t steps = w.block / 8;
    for (int64_t s = 0; s < steps; ++s) {
      uint32x4_t lo0, hi0, lo1, hi1;  // (lo, hi) of columns 0..3 and 4..7 of the half
      if constexpr (kBits == 4) {
        const uint8x16_t x0 = vld1q_u8(codes + 64 * s), x1 = vld1q_u8(codes + 64 * s + 16);
        lo0 = vreinterpretq_u32_u8(lookup(vandq_u8(x0, m4)));
        hi0 = vreinterpretq_u32_u8(lookup(vshrq_n_u8(x0, 4)));
        lo1 = vreinterpretq_u32_u8(lookup(vandq_u8(x1, m4)));
        hi1 = vreinterpretq_u32_u8(lookup(vshrq_n_u8(x1, 4)));
      } else {
        const uint8_t* c2 = codes + 128 * s;
        lo0 = vreinterpretq_u32_u8(veorq_u8(vld1q_u8(c2), sign));
        lo1 = vreinterpretq_u32_u8(veorq_u8(vld1q_u8(c2 + 16), sign));
        hi0 = vreinterpretq_u32_u8(veorq_u8(vld1q_u8(c2 + 64), sign));
        hi1 = vreinterpretq_u32_u8(veorq_u8(vld1q_u8(c2 + 80), sign));
      }
      const int8x16_t B[4] = {
          vreinterpretq_s8_u32(vzip1q_u32(lo0, hi0)), vreinterpretq_s8_u32(vzip2q_u32(lo0, hi0)),
          vreinterpretq_s8_u32(vzip1q_u32(lo1, hi1)), vreinterpretq_s8_u32(vzip2q_u32(lo1, hi1))};
      const int64_t k = b * w.block + 8 * s;
      for (int pr = 0; pr < P; ++pr) {
        const int8x16_t A =
            vcombine_s8(vld1_s8(qa + rows[2 * pr] * kp + k), vld1_s8(qa + rows[2 * pr + 1] * kp + k));
        for (int c = 0; c < 4; ++c) d[pr][c] = vmmlaq_s32(d[pr][c], A, B[c]);
      }
    }
    int32x4_t z[4] = {vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0)};
    if constexpr (kAsym) load_zp16(blk + w.zp_offset, z);
    const float32x4_t sc[2] = {load_scales4<kF16>(blk, 2 * h), load_scales4<kF16>(blk, 2 * h + 1)};
    for (int pr = 0; pr < P; ++pr) {
      const int64_t i0 = rows[2 * pr] * kb + b, i1 = rows[2 * pr + 1] * kb + b;
      const float32x4_t sa2 = vcombine_f32(vdup_n_f32(sa[i0]), vdup_n_f32(sa[i1]));
      const int32x4_t qs2 = vcombine_s32(vdup_n_s32(qsum[i0]), vdup_n_s32(qsum[i1]));
      for (int c = 0; c < 4; ++c) {
        int32x4_t dd = d[pr][c];
        if constexpr (kAsym) {
          dd = vmlsq_s32(dd, vsubq_s32(pair_lanes(z[2 * h + c / 2], c), vdupq_n_s32(kOff)), qs2);
        } else if constexpr (kDflt != kOff) {
          dd = vmlsq_s32(dd, vdupq_n_s32(kDflt - kOff), qs2);
        }
        // sa * sb per lane, then float(dot) * that, then the add: the reference's order.
        acc[pr][c] = accumulate_s(acc[pr][c], dd, vmulq_f32(sa2, pair_lanes(sc[c / 2], c)));
      }
    }
  }
  const int64_t n0 = p * 16 + 8 * h;
  if (n0 >= w.N) return;
  for (int pr = 0; pr < P; ++pr) {
    float32x4_t r0[2], r1[2];
    for (int q = 0; q < 2; ++q) {
      const float64x2_t a = vreinterpretq_f64_f32(acc[pr][2 * q]),
                        c = vreinterpretq_f64_f32(acc[pr][2 * q + 1]);
      r0[q] = vreinterpretq_f32_f64(vzip1q_f64(a, c));
      r1[q] = vreinterpretq_f32_f64(vzip2q_f64(a, c));
    }
    store_cols<2>(Y + (2 * pr) * ldy, bias, n0, w.N, r0);
    if (2 * pr + 1 < R) store_cols<2>(Y + (2 * pr + 1) * ldy, bias, n0, w.N, r1);
  }
}

template <int kBits, bool kLut, bool kAsym, bool kF16>
void gemm(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa, const float* sa,
          const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  const int64_t kp = w.k_blocks * w.block, kb = w.k_blocks;
  for_each_tile_4x8(p0, p1, M, [&](int64_t p, int64_t m, int h, auto rows) {
    tile<decltype(rows)::value, kBits, kLut, kAsym, kF16>(w, p, h, qa + m * kp, sa + m * kb, qsum + m * kb,
                                                          Y + m * ldy, ldy, bias);
  });
}

}  // namespace

template <bool kAsym, bool kF16>
void qgemm_q4x16_4x8_i8mm(NBITS_A64_GEMM_ARGS) {
  gemm<4, false, kAsym, kF16>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
}
template <bool kAsym, bool kF16>
void qgemm_q8x16_4x8_i8mm(NBITS_A64_GEMM_ARGS) {
  gemm<8, false, kAsym, kF16>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
}
template <bool kF16>
void qgemm_q4lx16_4x8_i8mm(NBITS_A64_GEMM_ARGS) {
  gemm<4, true, false, kF16>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
}

NBITS_A64_INSTANTIATE(qgemm_q4x16_4x8_i8mm, NBITS_A64_GEMM_ARGS);
NBITS_A64_INSTANTIATE(qgemm_q8x16_4x8_i8mm, NBITS_A64_GEMM_ARGS);
NBITS_A64_INSTANTIATE_LUT4(qgemm_q4lx16_4x8_i8mm, NBITS_A64_GEMM_ARGS);

}  // namespace nbits::kernels
