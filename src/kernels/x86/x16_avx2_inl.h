// Inline AVX2 helpers shared by the *_avx2.cc micro-kernels (include only from
// files compiled with AVX2 flags).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/x86/x16_avx2.h"

namespace nbits::kernels::avx2 {

inline int32_t load_i32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// 32 bytes of packed codes (blocks are 16-byte aligned only when zero points are packed).
inline __m256i load_codes(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// Scales of columns 8h..8h+7 of the block at `blk`, as floats (fp16 widened exactly).
template <bool kF16>
inline __m256 load_scales8(const uint8_t* blk, int h) {
  if constexpr (kF16) return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 16 * h)));
  return _mm256_loadu_ps(reinterpret_cast<const float*>(blk) + 8 * h);
}

// Mins of columns 8h..8h+7 of a block (16 floats at p).
inline __m256 load_mins8(const uint8_t* p, int h) {
  return _mm256_loadu_ps(reinterpret_cast<const float*>(p) + 8 * h);
}

// The scale formats of the int8 x16 kernels (their kSc): fp32, fp16 (PackedX16::scales_fp16) and
// super-block scales (PackedX16::super_blocks: int8 multipliers of an fp16 scale per 256 k).
enum : int { kScF32 = 0, kScF16 = 1, kScSuper = 2 };

// The scales and mins of panel p's blocks in format kSc, as floats: with super-block scales
// (float)q * D, which packing checked equals the source's fp32 scale exactly. enter(b, blk) before
// reading block b at blk: at a super-block's first block it widens the whole super-block's scales
// (and mins) into a small table, so each block then reads floats as the fp32 format does.
template <int kSc>
struct PanelScales {
  static constexpr int kMaxBlocks = 16;  // blocks per super-block: 256 / 16 at most
  const PackedX16& w;
  int64_t p;
  int64_t base = 0;  // the first block of the table
  alignas(32) float sc[kSc == kScSuper ? kMaxBlocks : 1][16];
  alignas(32) float mn[kSc == kScSuper ? kMaxBlocks : 1][16];
  PanelScales(const PackedX16& pw, int64_t pp) : w(pw), p(pp) {}
  static __m256 widen_h(const uint8_t* h8) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h8)));
  }
  static __m256 times(const uint8_t* q8, __m256 dv) {
    const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q8));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), dv);
  }
  void enter(int64_t b, const uint8_t* blk) {
    if constexpr (kSc == kScSuper) {
      if ((b & (w.super_blocks - 1)) != 0) return;
      const uint8_t* s = w.super(p, b);
      const __m256 d0 = widen_h(s), d1 = widen_h(s + 16);
      const int n = static_cast<int>(std::min<int64_t>(w.super_blocks, w.k_blocks - b));
      base = b;
      for (int j = 0; j < n; ++j, blk += w.block_stride) {
        _mm256_store_ps(sc[j], times(blk, d0));
        _mm256_store_ps(sc[j] + 8, times(blk + 8, d1));
      }
      if (w.has_mins) {
        const __m256 m0 = widen_h(s + 32), m1 = widen_h(s + 48);
        blk -= n * w.block_stride;
        for (int j = 0; j < n; ++j, blk += w.block_stride) {
          _mm256_store_ps(mn[j], times(blk + w.mins_offset, m0));
          _mm256_store_ps(mn[j] + 8, times(blk + w.mins_offset + 8, m1));
        }
      }
    }
  }
  // Columns 8h..8h+7 of block b at blk (entered).
  __m256 scales8(int64_t b, const uint8_t* blk, int h) const {
    if constexpr (kSc == kScSuper) return _mm256_load_ps(sc[b - base] + 8 * h);
    return load_scales8<kSc == kScF16>(blk, h);
  }
  __m256 mins8(int64_t b, const uint8_t* blk, int h) const {
    if constexpr (kSc == kScSuper) return _mm256_load_ps(mn[b - base] + 8 * h);
    return load_mins8(blk + w.mins_offset, h);
  }
};

// Broadcast of 4 int8 activations (one dword) to every lane.
inline __m256i bcast4(const int8_t* q) { return _mm256_set1_epi32(load_i32(q)); }

// int16 partial dots of one 64-byte int4 group half (8 columns x 8 k) with
// activations k..k+3 (alo) and k+4..k+7 (ahi): each lane sums 4 products,
// |lane| <= 4*15*127 = 7620, so up to 4 groups (30480) may be summed in int16.
inline __m256i dot16_q4(__m256i x, __m256i alo, __m256i ahi) {
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  const __m256i lo = _mm256_and_si256(x, m4);
  const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(x, 4), m4);
  return _mm256_add_epi16(_mm256_maddubs_epi16(lo, alo), _mm256_maddubs_epi16(hi, ahi));
}

// Groups of int4 codes whose int16 partial dots can be summed exactly.
constexpr int64_t kQ4GroupsPerI16 = 4;

// int16 lanes -> int32 (pairwise sums).
inline __m256i widen(__m256i s16) { return _mm256_madd_epi16(s16, _mm256_set1_epi16(1)); }

// Exact int32 dots of 8 columns x 4 int8 codes with 4 activations, against the
// codes shifted to signed (q - 128): sign trick keeps maddubs below 2*128*127.
inline __m256i dot_q8s(__m256i x, __m256i a) {
  const __m256i ws = _mm256_xor_si256(x, _mm256_set1_epi8(static_cast<char>(0x80)));
  const __m256i s16 = _mm256_maddubs_epi16(_mm256_abs_epi8(ws), _mm256_sign_epi8(a, ws));
  return _mm256_madd_epi16(s16, _mm256_set1_epi16(1));
}

// Zero points of 8 columns (bytes at p) as int32.
inline __m256i load_zp8(const uint8_t* p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}

// dot - (zp - offset) * qsum for 8 columns, where the dot was taken against
// codes minus `offset`; zp is the packed one (kAsym) or `dflt_zp`.
template <bool kAsym>
inline __m256i correct(__m256i d, const uint8_t* zp, int dflt_zp, int offset, int32_t qsum) {
  if constexpr (kAsym) {
    const __m256i z = _mm256_sub_epi32(load_zp8(zp), _mm256_set1_epi32(offset));
    return _mm256_sub_epi32(d, _mm256_mullo_epi32(z, _mm256_set1_epi32(qsum)));
  } else {
    const int z = dflt_zp - offset;
    return z == 0 ? d : _mm256_sub_epi32(d, _mm256_set1_epi32(z * qsum));
  }
}

// acc += float(dot) * (sa * scale): the reference's exact operation order, so
// results equal the scalar reference bit for bit. The empty asm keeps the
// compiler from contracting the multiply and add into an FMA (GCC's default
// -ffp-contract=fast for C++ would, in some kernels and not others).
inline __m256 accumulate(__m256 acc, __m256i dot, float sa, __m256 scales) {
  const __m256 s = _mm256_mul_ps(_mm256_set1_ps(sa), scales);
  __m256 prod = _mm256_mul_ps(_mm256_cvtepi32_ps(dot), s);
  __asm__("" : "+x"(prod));
  return _mm256_add_ps(acc, prod);
}

// acc += mins * (sa * (float)qsum): a block's min term (GGUF Q4_1 / Q4_K / Q5_K) in the
// reference's order, unfused like accumulate().
inline __m256 add_min_term(__m256 acc, __m256 mins, float sa, int32_t qsum) {
  __m256 prod = _mm256_mul_ps(mins, _mm256_set1_ps(sa * static_cast<float>(qsum)));
  __asm__("" : "+x"(prod));
  return _mm256_add_ps(acc, prod);
}

// Stores `cnt` (<= 8) columns of v (+ bias) at y.
inline void store8(float* y, __m256 v, const float* bias, int64_t cnt) {
  if (cnt == 8) {
    if (bias != nullptr) v = _mm256_add_ps(v, _mm256_loadu_ps(bias));
    _mm256_storeu_ps(y, v);
    return;
  }
  alignas(32) float t[8];
  _mm256_store_ps(t, v);
  for (int64_t c = 0; c < cnt; ++c) y[c] = bias != nullptr ? t[c] + bias[c] : t[c];
}

// Stores columns [n0, min(N, n0+16)) of (v0, v1) (+ bias) into y (indexed by column).
inline void store16(float* y, const float* bias, int64_t n0, int64_t N, __m256 v0, __m256 v1) {
  const int64_t cnt = std::min<int64_t>(16, N - n0);
  const float* b = bias != nullptr ? bias + n0 : nullptr;
  store8(y + n0, v0, b, std::min<int64_t>(8, cnt));
  if (cnt > 8) store8(y + n0 + 8, v1, b != nullptr ? b + 8 : nullptr, cnt - 8);
}

// Byte i of every dword moved to its low byte, others zero (pshufb selector;
// pshufb indexes within each 128-bit lane).
inline __m256i dword_byte_sel(int i) {
  const int b = static_cast<int>(0x80808000u) | i;
  return _mm256_setr_epi32(b, b + 4, b + 8, b + 12, b, b + 4, b + 8, b + 12);
}

// Column zero points (8 columns at p) as floats, or the default.
template <bool kAsym>
inline __m256 zp_ps(const uint8_t* p, int dflt) {
  if constexpr (kAsym) return _mm256_cvtepi32_ps(load_zp8(p));
  return _mm256_set1_ps(static_cast<float>(dflt));
}

// Rows [0, M) in tiles of up to 4: calls tile(m, rows) with `rows` a
// std::integral_constant<int, 1..4> (so the tile body is compiled per row count).
template <int kRows, typename Tile>
inline void for_each_row_tile(int64_t M, Tile&& tile) {
  static_assert(kRows == 4);
  for (int64_t m = 0; m < M; m += 4) switch (std::min<int64_t>(4, M - m)) {
      case 4:
        tile(m, std::integral_constant<int, 4>{});
        break;
      case 3:
        tile(m, std::integral_constant<int, 3>{});
        break;
      case 2:
        tile(m, std::integral_constant<int, 2>{});
        break;
      default:
        tile(m, std::integral_constant<int, 1>{});
        break;
    }
}

// The 4x8 GEMM tiling: for panels [p0, p1), rows in tiles of up to 4 and the
// two 8-column halves h of each panel, calls tile(p, m, h, rows).
template <typename Tile>
inline void for_each_tile_4x8(int64_t p0, int64_t p1, int64_t M, Tile&& tile) {
  for (int64_t p = p0; p < p1; ++p)
    for_each_row_tile<4>(M, [&](int64_t m, auto rows) {
      for (int h = 0; h < 2; ++h) tile(p, m, h, rows);
    });
}

}  // namespace nbits::kernels::avx2
