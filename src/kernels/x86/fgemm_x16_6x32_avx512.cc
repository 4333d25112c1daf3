// CompFp32 M>=2 GEMM on int4 / int8 x16 panels, AVX-512F: fgemm_q{4,8}x16[h]_6x32_avx512.
// Each pair of panels is dequantized once, (q - zp) * scale as the reference does
// (avx2::dequantize_panel), kChunkK values of k at a time into the thread's scratch (L1), and
// every row of A then runs over that chunk in tiles of 6 rows x 2 panels: 12 zmm accumulators,
// each lane one column's fp32 fma chain over k in order (carried through Y between chunks),
// 2 panel loads and 6 broadcasts per k. The AVX2 GEMM dequantizes every weight again
// for each tile of 4 rows; here the dequantization is shared by all M rows. Below kMinRows rows
// the AVX2 GEMM runs (a choice, not a measurement: there the shared dequantization serves 2-3
// rows).
#include <algorithm>
#include <vector>

#include "kernels/x86/x16_fp32_avx512.h"
#include "kernels/x86/x16_twins_avx2_inl.h"

namespace nbits::kernels {
namespace {

constexpr int64_t kMinRows = 4;
constexpr int64_t kChunkK = 256;  // k per pass: two panels' 32 KiB of dequantized weights stay in L1

// Y[r][n0 + c] for R rows over P dequantized panels (each kc x 16 floats, consecutive): the sums
// start from 0 (first) or from Y, and get the bias once (last).
template <int R, int P>
void tile(const float* wp, int64_t kc, const float* A, int64_t lda, float* Y, int64_t ldy, int64_t n0,
          int64_t N, const float* bias, bool first, bool last) {
  __m512 acc[R][P];
  __mmask16 mask[P];
  for (int i = 0; i < P; ++i) {
    const int64_t cols = std::clamp<int64_t>(N - (n0 + 16 * i), 0, 16);
    mask[i] = static_cast<__mmask16>((1u << cols) - 1);
    for (int r = 0; r < R; ++r)
      acc[r][i] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(mask[i], Y + r * ldy + n0 + 16 * i);
  }
  for (int64_t k = 0; k < kc; ++k) {
    __m512 row[P];
    for (int i = 0; i < P; ++i) row[i] = _mm512_loadu_ps(wp + (i * kc + k) * 16);
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(A[r * lda + k]);
      for (int i = 0; i < P; ++i) acc[r][i] = _mm512_fmadd_ps(a, row[i], acc[r][i]);
    }
  }
  for (int i = 0; i < P; ++i) {
    const int64_t n = n0 + 16 * i;
    if (last && bias != nullptr) {
      const __m512 b = _mm512_maskz_loadu_ps(mask[i], bias + n);
      for (int r = 0; r < R; ++r) acc[r][i] = _mm512_add_ps(acc[r][i], b);
    }
    for (int r = 0; r < R; ++r) _mm512_mask_storeu_ps(Y + r * ldy + n, mask[i], acc[r][i]);
  }
}

template <int P>
using TileFn = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t, int64_t, int64_t,
                        const float*, bool, bool);

// Rows per tile: 6 and 8 measured level (mlp_up 7.5-7.6 ms either way, M = 128, hot).
constexpr int kRows = 6;

template <int P>
TileFn<P> rows_tile(int rows) {
  constexpr TileFn<P> tiles[kRows] = {tile<1, P>, tile<2, P>, tile<3, P>, tile<4, P>, tile<5, P>, tile<6, P>};
  return tiles[rows - 1];
}

template <int Bits, bool kAsym, bool kF16>
void fgemm(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const float* A, int64_t lda, float* Y,
           int64_t ldy, const float* bias) {
  if (M < kMinRows) return avx2::fgemm_x16<Bits, kAsym, kF16>(w, p0, p1, M, A, lda, Y, ldy, bias);
  const int64_t chunk_blocks = std::max<int64_t>(1, kChunkK / w.block);
  thread_local std::vector<float> scratch;
  if (scratch.size() < static_cast<size_t>(2 * chunk_blocks * w.block * 16))
    scratch.resize(2 * chunk_blocks * w.block * 16);
  float* wp = scratch.data();
  auto run = [&](int64_t p, int64_t b0) {
    const int64_t b1 = std::min(w.k_blocks, b0 + chunk_blocks), kc = (b1 - b0) * w.block;
    const int np = static_cast<int>(std::min<int64_t>(2, p1 - p));
    for (int i = 0; i < np; ++i)
      avx2::dequantize_panel<Bits, kAsym, kF16>(w, p + i, b0, b1, wp + i * kc * 16);
    for (int64_t m = 0; m < M; m += kRows) {
      const int rows = static_cast<int>(std::min<int64_t>(kRows, M - m));
      (np == 2 ? rows_tile<2>(rows) : rows_tile<1>(rows))(wp, kc, A + m * lda + b0 * w.block, lda,
                                                          Y + m * ldy, ldy, p * 16, w.N, bias, b0 == 0,
                                                          b1 == w.k_blocks);
    }
  };
  // Every panel pair streams A's chunk columns (M x kChunkK), every chunk the pairs' columns of Y:
  // the smaller of A and Y is the one streamed again (measured: mlp_down, K = 4864, 1.17x
  // with chunks outermost; mlp_up, N = 4864, 1.06x with pairs outermost).
  if (w.K > w.N) {
    for (int64_t b0 = 0; b0 < w.k_blocks; b0 += chunk_blocks)
      for (int64_t p = p0; p < p1; p += 2) run(p, b0);
  } else {
    for (int64_t p = p0; p < p1; p += 2)
      for (int64_t b0 = 0; b0 < w.k_blocks; b0 += chunk_blocks) run(p, b0);
  }
}

}  // namespace

template <bool kAsym, bool kF16>
void fgemm_q4x16_6x32_avx512(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const float* A,
                             int64_t lda, float* Y, int64_t ldy, const float* bias) {
  fgemm<4, kAsym, kF16>(w, p0, p1, M, A, lda, Y, ldy, bias);
}

template <bool kAsym, bool kF16>
void fgemm_q8x16_6x32_avx512(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const float* A,
                             int64_t lda, float* Y, int64_t ldy, const float* bias) {
  fgemm<8, kAsym, kF16>(w, p0, p1, M, A, lda, Y, ldy, bias);
}

NBITS_X16_INSTANTIATE(fgemm_q4x16_6x32_avx512, const PackedX16&, int64_t, int64_t, int64_t, const float*,
                      int64_t, float*, int64_t, const float*);
NBITS_X16_INSTANTIATE(fgemm_q8x16_6x32_avx512, const PackedX16&, int64_t, int64_t, int64_t, const float*,
                      int64_t, float*, int64_t, const float*);

}  // namespace nbits::kernels
