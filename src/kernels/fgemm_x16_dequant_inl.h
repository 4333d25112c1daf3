// The CompFp32 M>=2 GEMM on int4 / int8 x16 panels that dequantizes each weight once for all
// rows, written once over a vector type V (include only from the files that instantiate it:
// kernels/x86/fgemm_x16_6x32_avx512.cc (zmm: a step is 2 panels), kernels/x86/fgemm_x16_6x16_avx2.cc
// (ymm: 1 panel) and kernels/arm64/fgemm_x16_neon.cc (two float32x4 a vector: 1 panel)).
//
// For each step of panels, kChunkK values of k at a time are dequantized as the reference does,
// (q - zp) * scale in fp32 (V::dequantize_panel), into the thread's scratch ([panel][k][16], in
// L1), and every row of A then runs over that chunk in tiles of up to kRows rows x V::kTileVecs
// vectors (2 vectors: 12 accumulators; on NEON each is two float32x4, 24), each lane one column's fp32 fma
// chain over k in order (carried through Y between chunks), kTileVecs weight loads and kRows
// broadcasts per k. The 4x8 GEMMs dequantize every weight again for each tile of 4 rows (4 vector
// operations per 4 FMAs); below kMinRows rows they still run (V::small_gemm): measured on x86
// (NBITS_BENCH_M, hot weights, 1 thread), the 4x8 GEMM is faster at M = 2 (0.71-0.93x for this one)
// and level at 3; from M = 4 this one wins (1.03-1.36x at 4, 1.4-1.9x at 6).
//
// V provides R, kLanes, kTileVecs, zero(), set1(float), load(const float*), fmadd(a, b, c) = a * b + c,
// add(a, b), load_partial(p, n) (lanes >= n zero), store_partial(p, x, n), and the templates
// <Bits, kAsym, kF16> dequantize_panel(w, p, b0, b1, out) (blocks [b0, b1) of panel p into
// out[(k - b0 * block) * 16 + column]) and small_gemm(w, p0, p1, M, A, lda, Y, ldy, bias).
#pragma once

#include <algorithm>
#include <vector>

#include "quant/packed_x16.h"

namespace nbits::kernels::fgemm_dequant {

constexpr int64_t kMinRows = 4;
constexpr int64_t kChunkK = 256;  // k per pass: a step's 16-32 KiB of dequantized weights stay in L1

using quant::PackedX16;
// Rows per tile: 6 and 8 measured level on AVX-512 (mlp_up 7.5-7.6 ms either way, M = 128, hot).
constexpr int kRows = 6;

// Y[r][n0 + c] for R rows over NV vectors of columns of the dequantized chunk wp (panels of kc x 16
// floats, consecutive): the sums start from 0 (first) or from Y, and get the bias once (last).
template <class V, int R, int NV>
void tile(const float* wp, int64_t kc, const float* A, int64_t lda, float* Y, int64_t ldy, int64_t n0,
          int64_t N, const float* bias, bool first, bool last) {
  using Vec = typename V::R;
  constexpr int L = V::kLanes;
  Vec acc[R][NV];
  int cols[NV];
  const float* wv[NV];  // vector v's columns at k = 0: panel v * L / 16, offset v * L % 16
  for (int v = 0; v < NV; ++v) {
    cols[v] = static_cast<int>(std::clamp<int64_t>(N - (n0 + L * v), 0, L));
    wv[v] = wp + (v * L / 16) * kc * 16 + v * L % 16;
    for (int r = 0; r < R; ++r)
      acc[r][v] = first ? V::zero() : V::load_partial(Y + r * ldy + n0 + L * v, cols[v]);
  }
  for (int64_t k = 0; k < kc; ++k) {
    Vec row[NV];
    for (int v = 0; v < NV; ++v) row[v] = V::load(wv[v] + k * 16);
    for (int r = 0; r < R; ++r) {
      const Vec a = V::set1(A[r * lda + k]);
      for (int v = 0; v < NV; ++v) acc[r][v] = V::fmadd(a, row[v], acc[r][v]);
    }
  }
  for (int v = 0; v < NV; ++v) {
    const int64_t n = n0 + L * v;
    if (last && bias != nullptr) {
      const Vec b = V::load_partial(bias + n, cols[v]);
      for (int r = 0; r < R; ++r) acc[r][v] = V::add(acc[r][v], b);
    }
    for (int r = 0; r < R; ++r) V::store_partial(Y + r * ldy + n, acc[r][v], cols[v]);
  }
}

template <class V>
using TileFn = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t, int64_t, int64_t,
                        const float*, bool, bool);

template <class V, int NV>
TileFn<V> rows_tile(int rows) {
  constexpr TileFn<V> tiles[kRows] = {tile<V, 1, NV>, tile<V, 2, NV>, tile<V, 3, NV>,
                                      tile<V, 4, NV>, tile<V, 5, NV>, tile<V, 6, NV>};
  return tiles[rows - 1];
}

template <class V, int Bits, bool kAsym, bool kF16>
void fgemm(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const float* A, int64_t lda, float* Y,
           int64_t ldy, const float* bias) {
  if (M < kMinRows) return V::template small_gemm<Bits, kAsym, kF16>(w, p0, p1, M, A, lda, Y, ldy, bias);
  constexpr int64_t kStep = std::max(1, V::kTileVecs * V::kLanes / 16);  // panels per step
  const int64_t chunk_blocks = std::max<int64_t>(1, kChunkK / w.block);
  thread_local std::vector<float> scratch;
  if (scratch.size() < static_cast<size_t>(kStep * chunk_blocks * w.block * 16))
    scratch.resize(kStep * chunk_blocks * w.block * 16);
  float* wp = scratch.data();
  auto run = [&](int64_t p, int64_t b0) {
    const int64_t b1 = std::min(w.k_blocks, b0 + chunk_blocks), kc = (b1 - b0) * w.block;
    const int64_t np = std::min(kStep, p1 - p);
    for (int64_t i = 0; i < np; ++i)
      V::template dequantize_panel<Bits, kAsym, kF16>(w, p + i, b0, b1, wp + i * kc * 16);
    constexpr int kFull = V::kTileVecs, kHalf = std::max(1, V::kTileVecs / 2);  // a short step: zmm only
    const bool full = np == kStep;
    // As few tiles as kRows allows, their rows as even as can be (8 = 4 + 4, not 6 + 2).
    const int64_t tiles = (M + kRows - 1) / kRows, base = M / tiles, extra = M % tiles;
    for (int64_t t = 0, m = 0; t < tiles; ++t) {
      const int rows = static_cast<int>(base + (t < extra ? 1 : 0));
      (full ? rows_tile<V, kFull>(rows) : rows_tile<V, kHalf>(rows))(wp, kc, A + m * lda + b0 * w.block, lda,
                                                                     Y + m * ldy, ldy, p * 16, w.N, bias,
                                                                     b0 == 0, b1 == w.k_blocks);
      m += rows;
    }
  };
  // Every step of panels streams A's chunk columns (M x kChunkK), every chunk the steps' columns
  // of Y: the smaller of A and Y is the one streamed again (measured on AVX-512: mlp_down,
  // K = 4864, 1.17x with chunks outermost; mlp_up, N = 4864, 1.06x with panels outermost).
  if (w.K > w.N) {
    for (int64_t b0 = 0; b0 < w.k_blocks; b0 += chunk_blocks)
      for (int64_t p = p0; p < p1; p += kStep) run(p, b0);
  } else {
    for (int64_t p = p0; p < p1; p += kStep)
      for (int64_t b0 = 0; b0 < w.k_blocks; b0 += chunk_blocks) run(p, b0);
  }
}

}  // namespace nbits::kernels::fgemm_dequant

// Defines and instantiates fgemm_q4x16_<tile>_<isa> and fgemm_q8x16_<tile>_<isa> over vector V
// (at namespace nbits::kernels).
#define NBITS_FGEMM_DEQUANT_ARGS                                                                             \
  const PackedX16 &w, int64_t p0, int64_t p1, int64_t M, const float *A, int64_t lda, float *Y, int64_t ldy, \
      const float *bias
#define NBITS_FGEMM_DEQUANT_ONE(V, bits, name)                                      \
  template <bool kAsym, bool kF16>                                                  \
  void name(NBITS_FGEMM_DEQUANT_ARGS) {                                             \
    fgemm_dequant::fgemm<V, bits, kAsym, kF16>(w, p0, p1, M, A, lda, Y, ldy, bias); \
  }                                                                                 \
  template void name<false, false>(NBITS_FGEMM_DEQUANT_ARGS);                       \
  template void name<false, true>(NBITS_FGEMM_DEQUANT_ARGS);                        \
  template void name<true, false>(NBITS_FGEMM_DEQUANT_ARGS);                        \
  template void name<true, true>(NBITS_FGEMM_DEQUANT_ARGS)
#define NBITS_FGEMM_DEQUANT_DEFINE(V, tile, isa)             \
  NBITS_FGEMM_DEQUANT_ONE(V, 4, fgemm_q4x16_##tile##_##isa); \
  NBITS_FGEMM_DEQUANT_ONE(V, 8, fgemm_q8x16_##tile##_##isa)
