// CompInt8 GEMV (M = 1) and GEMM (M >= 2) on int4 and int8 x16 panels, AVX-512
// VNNI. One 64-byte code group is one zmm: 16 columns x 4 unsigned codes per
// dword (int4: the low and the high nibbles are two such groups), so
// vpdpbusd(codes, broadcast of 4 int8 activations) adds the exact
// sum(code * a) of each column to its own int32 lane: no horizontal sums.
// Each block's int32 accumulator starts at -zp * sum(qa) (the zero point, or
// PackedX16::default_zp(), times the activation block sum), so after the block it
// holds the reference's exact dot; fp32 accumulation then follows the reference
// order. Block mins (has_mins, GGUF Q4_1/Q4_K/Q5_K) come right after each block's
// term as acc += min * (sa * float(qsum)), from the same block sums: no second
// pass over A or Y.
//
// Register tile: R rows x P panels, R * P independent int32 accumulators per
// block plus R * P fp32 accumulators over blocks; M = 1 runs R = 1 on
// 4 (int4) or 8 (int8) panels at once so the dot chains stay independent.
// GCC 12 reports _mm512_undefined_ps() (used inside _mm512_cvtepi32_ps and
// _mm512_cvtph_ps) as maybe-uninitialized: a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "kernels/panel_prefetch.h"
#include "kernels/x86/x16_avx512_inl.h"
#include "kernels/x86/x16_avx512vnni.h"

namespace nbits::kernels {
namespace {
using namespace x16_avx512;  // NOLINT(google-build-using-namespace): the shared helpers

#ifndef NBITS_VNNI_ROWS
#define NBITS_VNNI_ROWS 4
#endif
#ifndef NBITS_VNNI_PANELS
#define NBITS_VNNI_PANELS 2
#endif
// GEMV panels at once: int8 has no nibble unpack, so 8 panels (8 code + 8 int32
// + 8 fp32 zmm) still fit the 32 registers; int4 needs 8 more for the high nibbles.
#ifndef NBITS_VNNI_GEMV_PANELS_Q4
#define NBITS_VNNI_GEMV_PANELS_Q4 4
#endif
#ifndef NBITS_VNNI_GEMV_PANELS_Q8
#define NBITS_VNNI_GEMV_PANELS_Q8 8
#endif
constexpr int kRows = NBITS_VNNI_ROWS, kPanels = NBITS_VNNI_PANELS;
constexpr int kGemvPanelsQ4 = NBITS_VNNI_GEMV_PANELS_Q4, kGemvPanelsQ8 = NBITS_VNNI_GEMV_PANELS_Q8;

inline int32_t load_i32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

struct Args {
  const PackedX16* w;
  const int8_t* qa;  // row 0 of the tile
  const float* sa;
  const int32_t* qsum;
  float* Y;
  int64_t ldy;
  const float* bias;
};

// Rows [0, R) of the tile (qa rows k_blocks*block apart, sa / qsum rows
// k_blocks apart) times panels [p, p + P).
template <int kBits, int R, int P, bool kAsym, bool kF16, bool kWide, bool kMins>
void tile(const Args& a, int64_t p) {
  const PackedX16& w = *a.w;
  constexpr int kGroupK = kBits == 4 ? 8 : 4;
  const int32_t default_zp = w.default_zp();
  const int64_t kb = w.k_blocks, kp = kb * w.block, groups = w.block / kGroupK;
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  __m512 acc[R][P];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < P; ++j) acc[r][j] = _mm512_setzero_ps();
  const uint8_t* blk = w.panel(p);
  const size_t ps = w.panel_stride;
  for (int64_t b = 0; b < kb; ++b, blk += w.block_stride) {
    __m512i d[R][P];
    if constexpr (kAsym) {
      for (int j = 0; j < P; ++j) {
        const __m512i zp32 = _mm512_cvtepu8_epi32(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + j * ps + w.zp_offset)));
        for (int r = 0; r < R; ++r) d[r][j] = neg_zp_times<kWide>(zp32, a.qsum[r * kb + b]);
      }
    } else {
      for (int r = 0; r < R; ++r) {
        const __m512i init = _mm512_set1_epi32(-default_zp * a.qsum[r * kb + b]);
        for (int j = 0; j < P; ++j) d[r][j] = init;
      }
    }
    const uint8_t* codes = blk + w.header_bytes;
    const int8_t* q = a.qa + b * w.block;
    for (int64_t g = 0; g < groups; ++g, codes += 64, q += kGroupK) {
      if constexpr (R == 1)  // the GEMV streams the weights once: prefetch ahead of each panel
        for (int j = 0; j < P; ++j)
          _mm_prefetch(reinterpret_cast<const char*>(codes + j * ps) + 4096, _MM_HINT_T0);
      __m512i x[P];
      for (int j = 0; j < P; ++j) x[j] = _mm512_loadu_si512(codes + j * ps);
      if constexpr (kBits == 4) {
        __m512i hi[P];
        for (int j = 0; j < P; ++j) {
          hi[j] = _mm512_and_si512(_mm512_srli_epi16(x[j], 4), m4);
          x[j] = _mm512_and_si512(x[j], m4);
        }
        for (int r = 0; r < R; ++r) {
          const __m512i alo = _mm512_set1_epi32(load_i32(q + r * kp));
          const __m512i ahi = _mm512_set1_epi32(load_i32(q + r * kp + 4));
          for (int j = 0; j < P; ++j) {
            d[r][j] = _mm512_dpbusd_epi32(d[r][j], x[j], alo);
            d[r][j] = _mm512_dpbusd_epi32(d[r][j], hi[j], ahi);
          }
        }
      } else {
        for (int r = 0; r < R; ++r) {
          const __m512i av = _mm512_set1_epi32(load_i32(q + r * kp));
          for (int j = 0; j < P; ++j) d[r][j] = _mm512_dpbusd_epi32(d[r][j], x[j], av);
        }
      }
    }
    for (int j = 0; j < P; ++j) {
      const __m512 scales = load_scales16<kF16>(blk + j * ps);
      for (int r = 0; r < R; ++r) acc[r][j] = accumulate(acc[r][j], d[r][j], a.sa[r * kb + b], scales);
      if constexpr (kMins) {
        const __m512 mins = _mm512_loadu_ps(reinterpret_cast<const float*>(blk + j * ps + w.mins_offset));
        for (int r = 0; r < R; ++r)
          acc[r][j] = add_min_term(acc[r][j], mins, a.sa[r * kb + b], a.qsum[r * kb + b]);
      }
    }
  }
  for (int j = 0; j < P; ++j) {
    const int64_t n0 = (p + j) * 16;
    if (n0 >= w.N) return;
    const int64_t cnt = std::min<int64_t>(16, w.N - n0);
    const __mmask16 mask = static_cast<__mmask16>((1u << cnt) - 1);
    const __m512 bias = a.bias != nullptr ? _mm512_maskz_loadu_ps(mask, a.bias + n0) : _mm512_setzero_ps();
    for (int r = 0; r < R; ++r) {
      const __m512 v = a.bias != nullptr ? _mm512_add_ps(acc[r][j], bias) : acc[r][j];
      _mm512_mask_storeu_ps(a.Y + r * a.ldy + n0, mask, v);
    }
  }
}

using TileFn = void (*)(const Args&, int64_t);

// tile<R = 1..sizeof...(I), P> indexed by R - 1.
template <int kBits, int P, bool kAsym, bool kF16, bool kWide, bool kMins, int... I>
constexpr std::array<TileFn, sizeof...(I)> tiles(std::integer_sequence<int, I...>) {
  return {&tile<kBits, I + 1, P, kAsym, kF16, kWide, kMins>...};
}

// Panels [p0, p1) in steps of PT (the last few one at a time), rows in tiles of
// up to RT; each panel group is used by every row tile while it is in cache.
template <int kBits, int RT, int PT, bool kAsym, bool kF16, bool kWide = false, bool kMins = false>
void run_tiles(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa, const float* sa,
               const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  if constexpr (!kMins)
    if (w.has_mins)
      return run_tiles<kBits, RT, PT, kAsym, kF16, kWide, true>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
  if constexpr (kAsym && !kWide)
    if (w.block > 256)
      return run_tiles<kBits, RT, PT, kAsym, kF16, true, kMins>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
  static constexpr auto grouped =
      tiles<kBits, PT, kAsym, kF16, kWide, kMins>(std::make_integer_sequence<int, RT>{});
  static constexpr auto single =
      tiles<kBits, 1, kAsym, kF16, kWide, kMins>(std::make_integer_sequence<int, RT>{});
  const int64_t kb = w.k_blocks, kp = kb * w.block;
  const int64_t tiles_m = (M + RT - 1) / RT;
  for (int64_t p = p0; p < p1;) {
    const bool full = p + PT <= p1;
    const int64_t next = p + (full ? PT : 1);
    // M > 1: the next panel group while this one's row tiles run (kernels/panel_prefetch.h).
    const uint8_t* np = M > 1 && next < p1 ? w.panel(next) : nullptr;
    const size_t next_bytes = static_cast<size_t>(std::min<int64_t>(PT, p1 - next)) * w.panel_stride;
    for (int64_t m = 0; m < M; m += RT) {
      prefetch_slice(np, next_bytes, m / RT, tiles_m);
      const Args a{&w, qa + m * kp, sa + m * kb, qsum + m * kb, Y + m * ldy, ldy, bias};
      (full ? grouped : single)[std::min<int64_t>(RT, M - m) - 1](a, p);
    }
    p += full ? PT : 1;
  }
}

}  // namespace

template <bool kAsym, bool kF16>
void qgemv_q4x16_avx512vnni(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
                            const int32_t* qsum, float* y, const float* bias) {
  run_tiles<4, 1, kGemvPanelsQ4, kAsym, kF16>(w, p0, p1, 1, qa, sa, qsum, y, 0, bias);
}
template <bool kAsym, bool kF16>
void qgemv_q8x16_avx512vnni(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
                            const int32_t* qsum, float* y, const float* bias) {
  run_tiles<8, 1, kGemvPanelsQ8, kAsym, kF16>(w, p0, p1, 1, qa, sa, qsum, y, 0, bias);
}
template <bool kAsym, bool kF16>
void qgemm_q4x16_avx512vnni(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,
                            const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  run_tiles<4, kRows, kPanels, kAsym, kF16>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
}
template <bool kAsym, bool kF16>
void qgemm_q8x16_avx512vnni(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,
                            const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  run_tiles<8, kRows, kPanels, kAsym, kF16>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
}

NBITS_X16_INSTANTIATE(qgemv_q4x16_avx512vnni, const PackedX16&, int64_t, int64_t, const int8_t*, const float*,
                      const int32_t*, float*, const float*);
NBITS_X16_INSTANTIATE(qgemv_q8x16_avx512vnni, const PackedX16&, int64_t, int64_t, const int8_t*, const float*,
                      const int32_t*, float*, const float*);
NBITS_X16_INSTANTIATE(qgemm_q4x16_avx512vnni, const PackedX16&, int64_t, int64_t, int64_t, const int8_t*,
                      const float*, const int32_t*, float*, int64_t, const float*);
NBITS_X16_INSTANTIATE(qgemm_q8x16_avx512vnni, const PackedX16&, int64_t, int64_t, int64_t, const int8_t*,
                      const float*, const int32_t*, float*, int64_t, const float*);

}  // namespace nbits::kernels
