// CompInt8 x16 GEMV / GEMM bodies shared by the SDOT (qgemm_x16_dotprod.cc) and the ARMv8.0
// (qgemm_x16_neon.cc) kernels, templated on `Dot`: Dot::lane<L>(acc, w, a) adds to each int32 lane
// c of acc the 4-term dot of bytes 4c..4c+3 of w with bytes 4L..4L+3 of a (what SDOT by element
// does). Codes stay unsigned: int4 codes 0..15 are valid int8; int8 codes are flipped to q - 128;
// lut4 indices become q - 128 of the codes they stand for by TBL.
// Zero points are applied exactly per block with the activation sums (dot - (zp - off) * sum(qa)),
// and blocks accumulate in the reference's order, so results equal the scalar reference bit for bit.
#pragma once

#include "kernels/arm64/x16_neon_inl.h"

namespace nbits::kernels::arm64 {

inline int8x16_t nib_lo(uint8x16_t x) { return vreinterpretq_s8_u8(vandq_u8(x, vdupq_n_u8(0x0f))); }
inline int8x16_t nib_hi(uint8x16_t x) { return vreinterpretq_s8_u8(vshrq_n_u8(x, 4)); }
inline int8x16_t flip(uint8x16_t x) { return vreinterpretq_s8_u8(veorq_u8(x, vdupq_n_u8(0x80))); }

// How the int4 bodies read a panel's 4-bit codes: Nibbles, as unsigned 0..15 (the default zero
// point 8 applied with the activation sums); Lut4, as indices into the weight's table of 8-bit
// codes (PackedX16::lut4: GGUF MXFP4 / NVFP4, IQ4_NL / IQ4_XS, the IQ lattices), one TBL per 16
// indices giving code - 128 (their zero point, so no correction): the dots equal the int8 bodies'
// on the codes the table stands for.
struct Nibbles {
  static constexpr int kDflt = 8, kOff = 0;
  explicit Nibbles(const PackedX16& /*w*/) {}
  int8x16_t lo(uint8x16_t x) const { return nib_lo(x); }
  int8x16_t hi(uint8x16_t x) const { return nib_hi(x); }
};
struct Lut4 {
  static constexpr int kDflt = 128, kOff = 128;
  int8x16_t table;
  explicit Lut4(const PackedX16& w) : table(flip(vld1q_u8(w.lut))) {}
  int8x16_t lo(uint8x16_t x) const { return vqtbl1q_s8(table, vandq_u8(x, vdupq_n_u8(0x0f))); }
  int8x16_t hi(uint8x16_t x) const { return vqtbl1q_s8(table, vshrq_n_u8(x, 4)); }
};

// M = 1, int4 / lut4 (Dec): per 2 groups (16 k) one load of activations; lanes 0/1 are group g's
// low/high nibbles (k 8g..8g+3, 8g+4..8g+7), lanes 2/3 group g+1's. Two dot chains per 4 columns.
template <class Dot, bool kAsym, bool kF16, class Dec = Nibbles>
inline void qgemv_q4(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
                     const int32_t* qsum, float* y, const float* bias) {
  const int64_t groups = w.block / 8;  // even: blocks are multiples of 16
  const Dec dec(w);
  for (int64_t p = p0; p < p1; ++p) {
    const uint8_t* blk = w.panel(p);
    float32x4_t acc[4];
    for (auto& v : acc) v = vdupq_n_f32(0.0f);
    for (int64_t b = 0; b < w.k_blocks; ++b, blk += w.block_stride) {
      const uint8_t* codes = blk + w.header_bytes;
      const int8_t* q = qa + b * w.block;
      int32x4_t dl[4], dh[4];
      for (int j = 0; j < 4; ++j) dl[j] = dh[j] = vdupq_n_s32(0);
      for (int64_t g = 0; g < groups; g += 2, codes += 128, q += 16) {
        const int8x16_t a = vld1q_s8(q);
        for (int j = 0; j < 4; ++j) {
          const uint8x16_t x0 = vld1q_u8(codes + 16 * j), x1 = vld1q_u8(codes + 64 + 16 * j);
          dl[j] = Dot::template lane<0>(dl[j], dec.lo(x0), a);
          dh[j] = Dot::template lane<1>(dh[j], dec.hi(x0), a);
          dl[j] = Dot::template lane<2>(dl[j], dec.lo(x1), a);
          dh[j] = Dot::template lane<3>(dh[j], dec.hi(x1), a);
        }
      }
      int32x4_t z[4] = {vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0)};
      if constexpr (kAsym) load_zp16(blk + w.zp_offset, z);
      for (int j = 0; j < 4; ++j) {
        const int32x4_t d = correct<kAsym>(vaddq_s32(dl[j], dh[j]), z[j], Dec::kDflt, Dec::kOff, qsum[b]);
        acc[j] = accumulate(acc[j], d, sa[b], load_scales4<kF16>(blk, j));
      }
    }
    store_cols<4>(y, bias, p * 16, w.N, acc);
  }
}

// M = 1, int8: per 4 groups (16 k) one load of activations; lane L is group g+L.
template <class Dot, bool kAsym, bool kF16>
inline void qgemv_q8(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
                     const int32_t* qsum, float* y, const float* bias) {
  const int64_t groups = w.block / 4;  // a multiple of 4
  for (int64_t p = p0; p < p1; ++p) {
    const uint8_t* blk = w.panel(p);
    float32x4_t acc[4];
    for (auto& v : acc) v = vdupq_n_f32(0.0f);
    for (int64_t b = 0; b < w.k_blocks; ++b, blk += w.block_stride) {
      const uint8_t* codes = blk + w.header_bytes;
      const int8_t* q = qa + b * w.block;
      int32x4_t d0[4], d1[4];
      for (int j = 0; j < 4; ++j) d0[j] = d1[j] = vdupq_n_s32(0);
      for (int64_t g = 0; g < groups; g += 4, codes += 256, q += 16) {
        const int8x16_t a = vld1q_s8(q);
        for (int j = 0; j < 4; ++j) {
          d0[j] = Dot::template lane<0>(d0[j], flip(vld1q_u8(codes + 16 * j)), a);
          d1[j] = Dot::template lane<1>(d1[j], flip(vld1q_u8(codes + 64 + 16 * j)), a);
          d0[j] = Dot::template lane<2>(d0[j], flip(vld1q_u8(codes + 128 + 16 * j)), a);
          d1[j] = Dot::template lane<3>(d1[j], flip(vld1q_u8(codes + 192 + 16 * j)), a);
        }
      }
      int32x4_t z[4] = {vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0)};
      if constexpr (kAsym) load_zp16(blk + w.zp_offset, z);
      for (int j = 0; j < 4; ++j) {
        const int32x4_t d = correct<kAsym>(vaddq_s32(d0[j], d1[j]), z[j], 128, 128, qsum[b]);
        acc[j] = accumulate(acc[j], d, sa[b], load_scales4<kF16>(blk, j));
      }
    }
    store_cols<4>(y, bias, p * 16, w.N, acc);
  }
}

// Block epilogue of a GEMM tile: corrects the R x 2 dots of columns 8h..8h+7 and accumulates.
template <int R, bool kAsym, bool kF16>
inline void tile_epilogue(const PackedX16& w, const uint8_t* blk, int h, int64_t b, int dflt, int off,
                          const float* sa, const int32_t* qsum, int32x4_t (&d)[R][2],
                          float32x4_t (&acc)[R][2]) {
  int32x4_t z[4] = {vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0)};
  if constexpr (kAsym) load_zp16(blk + w.zp_offset, z);
  const float32x4_t s[2] = {load_scales4<kF16>(blk, 2 * h), load_scales4<kF16>(blk, 2 * h + 1)};
  for (int r = 0; r < R; ++r) {
    const int64_t i = r * w.k_blocks + b;
    for (int c = 0; c < 2; ++c)
      acc[r][c] =
          accumulate(acc[r][c], correct<kAsym>(d[r][c], z[2 * h + c], dflt, off, qsum[i]), sa[i], s[c]);
  }
}

template <int R>
inline void tile_store(const PackedX16& w, int64_t p, int h, float* Y, int64_t ldy, const float* bias,
                       const float32x4_t (&acc)[R][2]) {
  const int64_t n0 = p * 16 + 8 * h;
  if (n0 >= w.N) return;
  for (int r = 0; r < R; ++r) store_cols<2>(Y + r * ldy, bias, n0, w.N, acc[r]);
}

// M >= 2, int4 / lut4 (Dec): R rows x 8 columns (half h of panel p); each code group is unpacked
// once per tile.
template <class Dot, int R, bool kAsym, bool kF16, class Dec>
inline void qgemm_q4_tile(const PackedX16& w, const Dec& dec, int64_t p, int h, const int8_t* qa,
                          const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  const int64_t kp = w.k_blocks * w.block, groups = w.block / 8;
  float32x4_t acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = vdupq_n_f32(0.0f);
  const uint8_t* blk = w.panel(p);
  for (int64_t b = 0; b < w.k_blocks; ++b, blk += w.block_stride) {
    const uint8_t* codes = blk + w.header_bytes + 32 * h;
    int32x4_t d[R][2];
    for (int r = 0; r < R; ++r) d[r][0] = d[r][1] = vdupq_n_s32(0);
    for (int64_t g = 0; g < groups; g += 2, codes += 128) {
      const uint8x16_t x00 = vld1q_u8(codes), x01 = vld1q_u8(codes + 16);
      const uint8x16_t x10 = vld1q_u8(codes + 64), x11 = vld1q_u8(codes + 80);
      const int8x16_t l00 = dec.lo(x00), h00 = dec.hi(x00), l01 = dec.lo(x01), h01 = dec.hi(x01);
      const int8x16_t l10 = dec.lo(x10), h10 = dec.hi(x10), l11 = dec.lo(x11), h11 = dec.hi(x11);
      for (int r = 0; r < R; ++r) {
        const int8x16_t a = vld1q_s8(qa + r * kp + b * w.block + 8 * g);
        d[r][0] = Dot::template lane<0>(d[r][0], l00, a);
        d[r][1] = Dot::template lane<0>(d[r][1], l01, a);
        d[r][0] = Dot::template lane<1>(d[r][0], h00, a);
        d[r][1] = Dot::template lane<1>(d[r][1], h01, a);
        d[r][0] = Dot::template lane<2>(d[r][0], l10, a);
        d[r][1] = Dot::template lane<2>(d[r][1], l11, a);
        d[r][0] = Dot::template lane<3>(d[r][0], h10, a);
        d[r][1] = Dot::template lane<3>(d[r][1], h11, a);
      }
    }
    tile_epilogue<R, kAsym, kF16>(w, blk, h, b, Dec::kDflt, Dec::kOff, sa, qsum, d, acc);
  }
  tile_store<R>(w, p, h, Y, ldy, bias, acc);
}

// M >= 2, int8: R rows x 8 columns; per 4 groups (16 k) one activation load per row.
template <class Dot, int R, bool kAsym, bool kF16>
inline void qgemm_q8_tile(const PackedX16& w, int64_t p, int h, const int8_t* qa, const float* sa,
                          const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  const int64_t kp = w.k_blocks * w.block, groups = w.block / 4;
  float32x4_t acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = vdupq_n_f32(0.0f);
  const uint8_t* blk = w.panel(p);
  for (int64_t b = 0; b < w.k_blocks; ++b, blk += w.block_stride) {
    const uint8_t* codes = blk + w.header_bytes + 32 * h;
    int32x4_t d[R][2];
    for (int r = 0; r < R; ++r) d[r][0] = d[r][1] = vdupq_n_s32(0);
    for (int64_t g = 0; g < groups; g += 4, codes += 256) {
      int8x16_t x[4][2];
      for (int i = 0; i < 4; ++i) {
        x[i][0] = flip(vld1q_u8(codes + 64 * i));
        x[i][1] = flip(vld1q_u8(codes + 64 * i + 16));
      }
      for (int r = 0; r < R; ++r) {
        const int8x16_t a = vld1q_s8(qa + r * kp + b * w.block + 4 * g);
        for (int c = 0; c < 2; ++c) {
          d[r][c] = Dot::template lane<0>(d[r][c], x[0][c], a);
          d[r][c] = Dot::template lane<1>(d[r][c], x[1][c], a);
          d[r][c] = Dot::template lane<2>(d[r][c], x[2][c], a);
          d[r][c] = Dot::template lane<3>(d[r][c], x[3][c], a);
        }
      }
    }
    tile_epilogue<R, kAsym, kF16>(w, blk, h, b, 128, 128, sa, qsum, d, acc);
  }
  tile_store<R>(w, p, h, Y, ldy, bias, acc);
}

template <class Dot, bool kAsym, bool kF16, class Dec = Nibbles>
inline void qgemm_q4(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa, const float* sa,
                     const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  const int64_t kp = w.k_blocks * w.block, kb = w.k_blocks;
  const Dec dec(w);
  for_each_tile_4x8(p0, p1, M, [&](int64_t p, int64_t m, int h, auto rows) {
    qgemm_q4_tile<Dot, decltype(rows)::value, kAsym, kF16>(w, dec, p, h, qa + m * kp, sa + m * kb,
                                                           qsum + m * kb, Y + m * ldy, ldy, bias);
  });
}

template <class Dot, bool kAsym, bool kF16>
inline void qgemm_q8(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa, const float* sa,
                     const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  const int64_t kp = w.k_blocks * w.block, kb = w.k_blocks;
  for_each_tile_4x8(p0, p1, M, [&](int64_t p, int64_t m, int h, auto rows) {
    qgemm_q8_tile<Dot, decltype(rows)::value, kAsym, kF16>(w, p, h, qa + m * kp, sa + m * kb, qsum + m * kb,
                                                           Y + m * ldy, ldy, bias);
  });
}

}  // namespace nbits::kernels::arm64
