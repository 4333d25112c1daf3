// The x16 CompInt8 VNNI micro-kernels (GEMV and GEMM), written once over a vector type V:
// AVX-512 VNNI (V = x16_avx512::Zmm: 16 columns, one 64-byte code group per vector;
// qgemm_x16_avx512vnni.cc) and AVX-VNNI, the VEX form of AVX2-class cores (V = Ymm: 8 columns,
// a code group is two vectors; qgemm_x16_avxvnni.cc). A panel is 16 / V::kLanes vectors.
//
// vpdpbusd(codes, broadcast of 4 int8 activations) adds the exact sum(code * a) of each column
// to its own int32 lane (int4: the low and the high nibbles are two such groups): no horizontal
// sums. Each block's int32 accumulator starts at -zp * sum(qa) (the zero point, or
// PackedX16::default_zp(), times the activation block sum), so after the block it holds the
// reference's exact dot; fp32 accumulation then follows the reference order. Block mins
// (has_mins, GGUF Q4_1/Q4_K/Q5_K) come right after each block's term as
// acc += min * (sa * float(qsum)), from the same block sums: no second pass over A or Y.
//
// kSuper (PackedX16::super_blocks > 0, GGUF's K-quants at about the file's size): a block's scales
// (and mins) are int8 multipliers of its super-block's fp16 D (Dmin), widened once per super-block
// into registers; (float)q * D is exactly the source's fp32 scale (packing checked), so the
// accumulation is the reference's, bit for bit.
//
// Register tile: R rows x P panels, R * P * (16 / kLanes) independent int32 accumulators per
// block plus as many fp32 accumulators over blocks. Include only from a file compiled with V's
// ISA flags, after V's definition.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

#include "base/error.h"
#include "kernels/panel_prefetch.h"
#include "kernels/x86/x16_avx2.h"
#include "quant/packed_x16.h"

namespace nbits::kernels::x16_vnni {

using quant::PackedX16;

inline int32_t load_i32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// int5 / int6 panels (PackedX16 bits 5 / 6): the high bits of step t of a high-bit plane moved to
// bit 4 (int5: bit t of each byte) or bits 4 and 5 (int6: bits 2t, 2t + 1) by one 16-bit shift,
// masked (what the shift carries across a byte boundary lands outside the mask).
template <class V, int kBits>
inline typename V::I high_bits(typename V::I h, int t) {
  const int n = 4 - t * (kBits - 4);  // a constant once the group loop unrolls
  const typename V::I x = n > 0 ? V::slli16(h, n) : n < 0 ? V::srli16(h, -n) : h;
  return V::and_(x, V::bytes(kBits == 5 ? 0x10 : 0x30));
}

struct Args {
  const PackedX16* w;
  const int8_t* qa;  // row 0 of the tile
  const float* sa;
  const int32_t* qsum;
  float* Y;
  int64_t ldy;
  const float* bias;
  // One row tile per panel (the GEMV, and small M: a speculative verify step): the tile streams the
  // panels from memory itself, prefetching ahead as it goes; else the next panel group is fetched
  // in slices over the row tiles (kernels/panel_prefetch.h).
  bool stream;
};

// Rows [0, R) of the tile (qa rows k_blocks*block apart, sa / qsum rows k_blocks apart) times
// panels [p, p + P). Vector j of a row covers columns 16 * (p + j / H) + kLanes * (j % H).
// G > 0: the code groups of a block (block / (8 or 4)), known at compile time so the group loop
// unrolls; G = 0: counted at run time.
template <class V, int kBits, int R, int P, int G, bool kAsym, bool kF16, bool kWide, bool kMins,
          bool kSuper = false>
void tile(const Args& a, int64_t p) {
  using I = typename V::I;
  using F = typename V::F;
  constexpr int L = V::kLanes, H = 16 / L, J = P * H;
  static_assert(kBits == 4 || kBits == 5 || kBits == 6 || kBits == 8);
  constexpr bool kNibbles = kBits != 8;  // int4, and the low 4 bits of int5 / int6
  constexpr int kGroupK = kNibbles ? 8 : 4;
  constexpr int kPlaneSteps = kBits == 5 ? 8 : 4;  // steps (4 k) a high-bit plane holds
  constexpr int kScaleBytes = kF16 ? 2 : 4;
  const PackedX16& w = *a.w;
  // int5 / int6 dots are taken against the codes minus code_lo.
  const int32_t lo = kBits == 5 || kBits == 6 ? w.code_lo : 0, default_zp = w.default_zp() - lo;
  const int64_t kb = w.k_blocks, kp = kb * w.block, groups = G > 0 ? G : w.block / kGroupK;
  const size_t ps = w.panel_stride;
  // Byte offset of vector j's part of a panel-relative field whose elements are `bytes` wide.
  const auto at = [ps](int j, size_t bytes) { return (j / H) * ps + (j % H) * L * bytes; };
  const I m4 = V::bytes(0x0f);
  F acc[R][J];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < J; ++j) acc[r][j] = V::zero();
  F sd[kSuper ? J : 1], smd[kSuper && kMins ? J : 1];  // the super-block's D (and Dmin) per vector
  for (auto& v : sd) v = V::zero();
  for (auto& v : smd) v = V::zero();
  const uint8_t* blk = w.panel(p);
  for (int64_t b = 0; b < kb; ++b, blk += w.block_stride) {
    if constexpr (kSuper)
      if ((b & (w.super_blocks - 1)) == 0) {
        const uint8_t* s = w.super(p, b);
        for (int j = 0; j < J; ++j) {
          sd[j] = V::halves(s + at(j, 2));
          if constexpr (kMins) smd[j] = V::halves(s + 32 + at(j, 2));
        }
      }
    I d[R][J];
    if constexpr (kAsym) {
      for (int j = 0; j < J; ++j) {
        const I zp32 = V::zero_points(blk + at(j, 1) + w.zp_offset);
        for (int r = 0; r < R; ++r) {
          d[r][j] = V::template neg_zp_times<kWide>(zp32, a.qsum[r * kb + b]);
          if (lo != 0) d[r][j] = V::add32(d[r][j], V::bcast(lo * a.qsum[r * kb + b]));
        }
      }
    } else {
      for (int r = 0; r < R; ++r) {
        const I init = V::bcast(-default_zp * a.qsum[r * kb + b]);
        for (int j = 0; j < J; ++j) d[r][j] = init;
      }
    }
    const uint8_t* codes = blk + w.header_bytes;
    const uint8_t* planes = blk + w.high_planes_offset();
    const int8_t* q = a.qa + b * w.block;
#pragma GCC unroll 8
    for (int64_t g = 0; g < groups; ++g, codes += 64, q += kGroupK) {
      if (a.stream)  // the weights are read once: prefetch ahead of each panel
        for (int j = 0; j < P; ++j)
          _mm_prefetch(reinterpret_cast<const char*>(codes + j * ps) + 4096, _MM_HINT_T0);
      I x[J];
      for (int j = 0; j < J; ++j) x[j] = V::load(codes + at(j, 4));
      if constexpr (kNibbles) {
        I hi[J];
        for (int j = 0; j < J; ++j) {
          hi[j] = V::and_(V::srli16_4(x[j]), m4);
          x[j] = V::and_(x[j], m4);
        }
        if constexpr (kBits != 4) {  // steps 2g (low nibbles) and 2g + 1 (high) of plane 2g / kPlaneSteps
          const uint8_t* plane = planes + 64 * (2 * g / kPlaneSteps);
          const int t = static_cast<int>(2 * g % kPlaneSteps);
          if (a.stream && t == 0)
            for (int j = 0; j < P; ++j)
              _mm_prefetch(reinterpret_cast<const char*>(plane + j * ps) + 4096, _MM_HINT_T0);
          for (int j = 0; j < J; ++j) {
            const I h = V::load(plane + at(j, 4));
            x[j] = V::or_(x[j], high_bits<V, kBits>(h, t));
            hi[j] = V::or_(hi[j], high_bits<V, kBits>(h, t + 1));
          }
        }
        for (int r = 0; r < R; ++r) {
          const I alo = V::bcast(load_i32(q + r * kp));
          const I ahi = V::bcast(load_i32(q + r * kp + 4));
          for (int j = 0; j < J; ++j) {
            d[r][j] = V::dpbusd(d[r][j], x[j], alo);
            d[r][j] = V::dpbusd(d[r][j], hi[j], ahi);
          }
        }
      } else {
        for (int r = 0; r < R; ++r) {
          const I av = V::bcast(load_i32(q + r * kp));
          for (int j = 0; j < J; ++j) d[r][j] = V::dpbusd(d[r][j], x[j], av);
        }
      }
    }
    for (int j = 0; j < J; ++j) {
      F scales;
      if constexpr (kSuper)
        scales = V::times_i8(blk + at(j, 1), sd[j]);
      else
        scales = V::template scales<kF16>(blk + at(j, kScaleBytes));
      for (int r = 0; r < R; ++r) acc[r][j] = V::accumulate(acc[r][j], d[r][j], a.sa[r * kb + b], scales);
      if constexpr (kMins) {
        F mins;
        if constexpr (kSuper)
          mins = V::times_i8(blk + at(j, 1) + w.mins_offset, smd[j]);
        else
          mins = V::loadf(blk + at(j, 4) + w.mins_offset);
        for (int r = 0; r < R; ++r)
          acc[r][j] = V::add_min_term(acc[r][j], mins, a.sa[r * kb + b], a.qsum[r * kb + b]);
      }
    }
  }
  for (int j = 0; j < J; ++j) {
    const int64_t n0 = (p + j / H) * 16 + (j % H) * L;
    if (n0 >= w.N) return;
    const int64_t cnt = std::min<int64_t>(L, w.N - n0);
    for (int r = 0; r < R; ++r)
      V::store(a.Y + r * a.ldy + n0, acc[r][j], a.bias != nullptr ? a.bias + n0 : nullptr, cnt);
  }
}

using TileFn = void (*)(const Args&, int64_t);

// tile<R = 1..sizeof...(I), P, G> indexed by R - 1.
template <class V, int kBits, int P, int G, bool kAsym, bool kF16, bool kWide, bool kMins, bool kSuper,
          int... I>
constexpr std::array<TileFn, sizeof...(I)> tiles(std::integer_sequence<int, I...>) {
  return {&tile<V, kBits, I + 1, P, G, kAsym, kF16, kWide, kMins, kSuper>...};
}

// Panels [p0, p1) in steps of PT (the last few one at a time), rows in tiles of up to RT; each
// panel group is used by every row tile while it is in cache. Blocks of 32 (genai's, Optimum's
// and GGUF's) run tiles compiled for their group count. kSuper: w has super-block scales (int4
// only; the kernels of that format set it, the plain formats' kernels never see one).
template <class V, int kBits, int RT, int PT, bool kAsym, bool kF16, bool kWide = false, bool kMins = false,
          int G = -1, bool kSuper = false>
void run_tiles(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa, const float* sa,
               const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  // Mins come without zero points or with uniform ones, folded (GGUF's types); the VNNI sets do not
  // take a weight with both (register_x86.cc: vnni_tiles_take), so no tile is compiled for both.
  if constexpr (!kMins)
    if (w.has_mins) {
      if constexpr (kAsym)
        fail("internal error: a weight with zero points and mins reached a VNNI tile");
      else
        return run_tiles<V, kBits, RT, PT, kAsym, kF16, kWide, true, G, kSuper>(w, p0, p1, M, qa, sa, qsum, Y,
                                                                                ldy, bias);
    }
  if constexpr (kAsym && !kWide)
    if (w.block > 256)
      return run_tiles<V, kBits, RT, PT, kAsym, kF16, true, kMins, G, kSuper>(w, p0, p1, M, qa, sa, qsum, Y,
                                                                              ldy, bias);
  if constexpr (G < 0) {
    constexpr int kG32 = kBits == 8 ? 8 : 4;
    if constexpr (kBits == 6)  // GGUF Q6_K: blocks of 16
      if (w.block == 16)
        return run_tiles<V, kBits, RT, PT, kAsym, kF16, kWide, kMins, 2, kSuper>(w, p0, p1, M, qa, sa, qsum,
                                                                                 Y, ldy, bias);
    if (w.block == 32)
      return run_tiles<V, kBits, RT, PT, kAsym, kF16, kWide, kMins, kG32, kSuper>(w, p0, p1, M, qa, sa, qsum,
                                                                                  Y, ldy, bias);
    return run_tiles<V, kBits, RT, PT, kAsym, kF16, kWide, kMins, 0, kSuper>(w, p0, p1, M, qa, sa, qsum, Y,
                                                                             ldy, bias);
  } else {
    static constexpr auto grouped =
        tiles<V, kBits, PT, G, kAsym, kF16, kWide, kMins, kSuper>(std::make_integer_sequence<int, RT>{});
    static constexpr auto single =
        tiles<V, kBits, 1, G, kAsym, kF16, kWide, kMins, kSuper>(std::make_integer_sequence<int, RT>{});
    const int64_t kb = w.k_blocks, kp = kb * w.block;
    const int64_t tiles_m = (M + RT - 1) / RT;
    const bool stream = tiles_m == 1;
    for (int64_t p = p0; p < p1;) {
      // Small M (one row tile, M > 1): one panel at a time, one stream from memory (on Zen4 two
      // streams took up to 2x the time of one: a 2-row step 2.1x a 1-row one). The GEMV keeps PT
      // panels (its 4-panel and one-panel forms are both candidates of the kernel choice).
      const bool full = !(stream && M > 1) && p + PT <= p1;
      const int64_t next = p + (full ? PT : 1);
      // Several row tiles: the next panel group while this one's run (kernels/panel_prefetch.h).
      const uint8_t* np = !stream && next < p1 ? w.panel(next) : nullptr;
      const size_t next_bytes = static_cast<size_t>(std::min<int64_t>(PT, p1 - next)) * w.panel_stride;
      for (int64_t m = 0; m < M; m += RT) {
        prefetch_slice(np, next_bytes, m / RT, tiles_m);
        const Args a{&w, qa + m * kp, sa + m * kb, qsum + m * kb, Y + m * ldy, ldy, bias, stream};
        (full ? grouped : single)[std::min<int64_t>(RT, M - m) - 1](a, p);
      }
      p += full ? PT : 1;
    }
  }
}

// The GEMM on the formats the tile does not read (int5 / int6 / lut4 codes, super-block scales with
// zero points): each group of PT panels widened to a plain format once (widen_x16_panels_avx2), then the
// int4 / int8 tile for every row tile. Below 4 rows the widening costs more than it saves: the AVX2
// kernels read those panels directly. int4 with super-block scales and no zero points (GGUF Q4_K)
// goes to the tile as it is.
template <class V, int RT, int PT, bool kAsym>
void run_widened(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa, const float* sa,
                 const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  // int4 with super-block scales and no zero points (GGUF Q4_K): the tile reads it directly.
  if constexpr (!kAsym)
    if (w.super_blocks > 0 && w.bits == 4 && !w.lut4)
      return run_tiles<V, 4, RT, PT, false, false, false, false, -1, true>(w, p0, p1, M, qa, sa, qsum, Y, ldy,
                                                                           bias);
  // int5 / int6 without zero points, in one row tile (small M: a speculative verify step): the tile
  // reads them as they are, one panel at a time (fp16 or super-block scales: GGUF Q5_0 / Q5_1 /
  // Q5_K / Q6_K). More rows amortise a widening: the int8 tile then has no unpacking a row tile.
  if constexpr (!kAsym)
    if ((w.bits == 5 || w.bits == 6) && M <= RT && (w.super_blocks > 0 || w.scales_fp16)) {
      using F = void (*)(const PackedX16&, int64_t, int64_t, int64_t, const int8_t*, const float*,
                         const int32_t*, float*, int64_t, const float*);
      constexpr F k5 = run_tiles<V, 5, RT, 1, false, false, false, false, -1, true>,
                  h5 = run_tiles<V, 5, RT, 1, false, true, false, false, -1, false>,
                  k6 = run_tiles<V, 6, RT, 1, false, false, false, false, -1, true>,
                  h6 = run_tiles<V, 6, RT, 1, false, true, false, false, -1, false>;
      const F f = w.super_blocks > 0 ? (w.bits == 5 ? k5 : k6) : (w.bits == 5 ? h5 : h6);
      return f(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
    }
  if (M < 4) {
    if (w.lut4) {  // never with stored zero points (quant::pack_x16)
      const int sc = w.super_blocks > 0 ? 2 : w.scales_fp16 ? 1 : 0;
      const auto f = sc == 2   ? qgemm_q4lx16_4x16_avx2<2>
                     : sc == 1 ? qgemm_q4lx16_4x16_avx2<1>
                               : qgemm_q4lx16_4x16_avx2<0>;
      return f(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
    }
    if (w.super_blocks > 0 && w.bits == 4)
      return qgemm_q4x16_4x16_avx2<kAsym, 2>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
    if (w.bits == 5 || w.bits == 6) {
      const auto f = w.super_blocks > 0
                         ? (w.bits == 5 ? qgemm_q5x16_4x16_avx2<kAsym, 2> : qgemm_q6x16_4x16_avx2<kAsym, 2>)
                     : w.scales_fp16
                         ? (w.bits == 5 ? qgemm_q5x16_4x16_avx2<kAsym, 1> : qgemm_q6x16_4x16_avx2<kAsym, 1>)
                         : (w.bits == 5 ? qgemm_q5x16_4x16_avx2<kAsym, 0> : qgemm_q6x16_4x16_avx2<kAsym, 0>);
      return f(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
    }
  }
  thread_local PackedX16 wide;
  for (int64_t p = p0; p < p1; p += PT) {
    const int64_t n = std::min<int64_t>(PT, p1 - p);
    widen_x16_panels_avx2(w, p, n, wide);
    float* y = Y + 16 * p;
    const float* b = bias != nullptr ? bias + 16 * p : nullptr;
    if (wide.bits == 4)
      wide.scales_fp16 ? run_tiles<V, 4, RT, PT, kAsym, true>(wide, 0, n, M, qa, sa, qsum, y, ldy, b)
                       : run_tiles<V, 4, RT, PT, kAsym, false>(wide, 0, n, M, qa, sa, qsum, y, ldy, b);
    else
      wide.scales_fp16 ? run_tiles<V, 8, RT, PT, kAsym, true>(wide, 0, n, M, qa, sa, qsum, y, ldy, b)
                       : run_tiles<V, 8, RT, PT, kAsym, false>(wide, 0, n, M, qa, sa, qsum, y, ldy, b);
  }
}

}  // namespace nbits::kernels::x16_vnni

// The int5 / int6 GEMV's instantiations: both widths, three scale formats (avx2::kScF32, kScF16,
// kScSuper).
#define NBITS_X16_Q56_INSTANTIATE(fn)                                                                     \
  template void fn<5, 0>(const PackedX16&, int64_t, int64_t, const int8_t*, const float*, const int32_t*, \
                         float*, const float*);                                                           \
  template void fn<5, 1>(const PackedX16&, int64_t, int64_t, const int8_t*, const float*, const int32_t*, \
                         float*, const float*);                                                           \
  template void fn<5, 2>(const PackedX16&, int64_t, int64_t, const int8_t*, const float*, const int32_t*, \
                         float*, const float*);                                                           \
  template void fn<6, 0>(const PackedX16&, int64_t, int64_t, const int8_t*, const float*, const int32_t*, \
                         float*, const float*);                                                           \
  template void fn<6, 1>(const PackedX16&, int64_t, int64_t, const int8_t*, const float*, const int32_t*, \
                         float*, const float*);                                                           \
  template void fn<6, 2>(const PackedX16&, int64_t, int64_t, const int8_t*, const float*, const int32_t*, \
                         float*, const float*)

// Defines and instantiates the kernels NBITS_X16_VNNI_DECLARE(isa) declares (x16_vnni.h) on vector
// type V: GEMM tiles of RT rows x PT panels, GEMV groups of GQ4 (int4) / GQ8 (int8) panels, and the
// GEMV one panel at a time (_1p: one stream, as the AVX2 GEMV reads; a candidate of the kernel
// choice, since cores differ in how many streams their prefetchers follow), both GEMVs on int4
// panels with super-block scales (qgemv_q4x16k_*: GGUF Q4_K at the file's size), and the one-panel
// GEMV on int5 / int6 panels without zero points (qgemv_q56x16_1p_*: GGUF Q5_0 / Q5_1 / Q5_K / Q6_K
// at the file's size). Use inside namespace
// nbits::kernels of the ISA's file.
#define NBITS_X16_VNNI_DEFINE(isa, V, RT, PT, GQ4, GQ8)                                                      \
  template <bool kAsym, bool kF16>                                                                           \
  void qgemv_q4x16_##isa(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,      \
                         const int32_t* qsum, float* y, const float* bias) {                                 \
    x16_vnni::run_tiles<V, 4, 1, GQ4, kAsym, kF16>(w, p0, p1, 1, qa, sa, qsum, y, 0, bias);                  \
  }                                                                                                          \
  template <bool kAsym, bool kF16>                                                                           \
  void qgemv_q8x16_##isa(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,      \
                         const int32_t* qsum, float* y, const float* bias) {                                 \
    x16_vnni::run_tiles<V, 8, 1, GQ8, kAsym, kF16>(w, p0, p1, 1, qa, sa, qsum, y, 0, bias);                  \
  }                                                                                                          \
  template <bool kAsym, bool kF16>                                                                           \
  void qgemv_q4x16_1p_##isa(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,   \
                            const int32_t* qsum, float* y, const float* bias) {                              \
    x16_vnni::run_tiles<V, 4, 1, 1, kAsym, kF16>(w, p0, p1, 1, qa, sa, qsum, y, 0, bias);                    \
  }                                                                                                          \
  template <bool kAsym, bool kF16>                                                                           \
  void qgemv_q8x16_1p_##isa(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,   \
                            const int32_t* qsum, float* y, const float* bias) {                              \
    x16_vnni::run_tiles<V, 8, 1, 1, kAsym, kF16>(w, p0, p1, 1, qa, sa, qsum, y, 0, bias);                    \
  }                                                                                                          \
  template <bool kAsym>                                                                                      \
  void qgemv_q4x16k_##isa(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,     \
                          const int32_t* qsum, float* y, const float* bias) {                                \
    x16_vnni::run_tiles<V, 4, 1, GQ4, kAsym, false, false, false, -1, true>(w, p0, p1, 1, qa, sa, qsum, y,   \
                                                                            0, bias);                        \
  }                                                                                                          \
  template <bool kAsym>                                                                                      \
  void qgemv_q4x16k_1p_##isa(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,  \
                             const int32_t* qsum, float* y, const float* bias) {                             \
    x16_vnni::run_tiles<V, 4, 1, 1, kAsym, false, false, false, -1, true>(w, p0, p1, 1, qa, sa, qsum, y, 0,  \
                                                                          bias);                             \
  }                                                                                                          \
  template <int kBits, int kSc>                                                                              \
  void qgemv_q56x16_1p_##isa(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,  \
                             const int32_t* qsum, float* y, const float* bias) {                             \
    x16_vnni::run_tiles<V, kBits, 1, 1, false, kSc == 1, false, false, -1, kSc == 2>(w, p0, p1, 1, qa, sa,   \
                                                                                     qsum, y, 0, bias);      \
  }                                                                                                          \
  template <bool kAsym, bool kF16>                                                                           \
  void qgemm_q4x16_##isa(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,            \
                         const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {   \
    x16_vnni::run_tiles<V, 4, RT, PT, kAsym, kF16>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);                \
  }                                                                                                          \
  template <bool kAsym, bool kF16>                                                                           \
  void qgemm_q8x16_##isa(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,            \
                         const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {   \
    x16_vnni::run_tiles<V, 8, RT, PT, kAsym, kF16>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);                \
  }                                                                                                          \
  template <bool kAsym>                                                                                      \
  void qgemm_x16_widened_##isa(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,      \
                               const float* sa, const int32_t* qsum, float* Y, int64_t ldy,                  \
                               const float* bias) {                                                          \
    x16_vnni::run_widened<V, RT, PT, kAsym>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);                       \
  }                                                                                                          \
  template void qgemm_x16_widened_##isa<false>(const PackedX16&, int64_t, int64_t, int64_t, const int8_t*,   \
                                               const float*, const int32_t*, float*, int64_t, const float*); \
  template void qgemm_x16_widened_##isa<true>(const PackedX16&, int64_t, int64_t, int64_t, const int8_t*,    \
                                              const float*, const int32_t*, float*, int64_t, const float*);  \
  template void qgemv_q4x16k_##isa<false>(const PackedX16&, int64_t, int64_t, const int8_t*, const float*,   \
                                          const int32_t*, float*, const float*);                             \
  template void qgemv_q4x16k_##isa<true>(const PackedX16&, int64_t, int64_t, const int8_t*, const float*,    \
                                         const int32_t*, float*, const float*);                              \
  template void qgemv_q4x16k_1p_##isa<false>(const PackedX16&, int64_t, int64_t, const int8_t*,              \
                                             const float*, const int32_t*, float*, const float*);            \
  template void qgemv_q4x16k_1p_##isa<true>(const PackedX16&, int64_t, int64_t, const int8_t*, const float*, \
                                            const int32_t*, float*, const float*);                           \
  NBITS_X16_Q56_INSTANTIATE(qgemv_q56x16_1p_##isa);                                                          \
  NBITS_X16_INSTANTIATE(qgemv_q4x16_##isa, const PackedX16&, int64_t, int64_t, const int8_t*, const float*,  \
                        const int32_t*, float*, const float*);                                               \
  NBITS_X16_INSTANTIATE(qgemv_q8x16_##isa, const PackedX16&, int64_t, int64_t, const int8_t*, const float*,  \
                        const int32_t*, float*, const float*);                                               \
  NBITS_X16_INSTANTIATE(qgemv_q4x16_1p_##isa, const PackedX16&, int64_t, int64_t, const int8_t*,             \
                        const float*, const int32_t*, float*, const float*);                                 \
  NBITS_X16_INSTANTIATE(qgemv_q8x16_1p_##isa, const PackedX16&, int64_t, int64_t, const int8_t*,             \
                        const float*, const int32_t*, float*, const float*);                                 \
  NBITS_X16_INSTANTIATE(qgemm_q4x16_##isa, const PackedX16&, int64_t, int64_t, int64_t, const int8_t*,       \
                        const float*, const int32_t*, float*, int64_t, const float*);                        \
  NBITS_X16_INSTANTIATE(qgemm_q8x16_##isa, const PackedX16&, int64_t, int64_t, int64_t, const int8_t*,       \
                        const float*, const int32_t*, float*, int64_t, const float*)
