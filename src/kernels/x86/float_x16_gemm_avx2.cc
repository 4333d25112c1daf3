// Half-precision x16 panels (kernels/float_x16_matmul.h) on AVX2+FMA+F16C: tiles of
// R rows of A x P panels (R * P <= 4, 2 * R * P accumulators of 8 floats). Each
// accumulator lane is one column's fp32 fma chain over k in order, so results are
// bitwise those of the scalar reference.
#include <immintrin.h>

#include <algorithm>
#include <type_traits>

#include "kernels/x86/float_x16_x86.h"

namespace nbits::kernels {
namespace {

template <X16Float E>
using Elem = std::conditional_t<E == X16Float::kF32, float, uint16_t>;

template <X16Float E>
inline __m256 widen8(const Elem<E>* h) {
  if constexpr (E == X16Float::kF32) {
    return _mm256_loadu_ps(h);
  } else {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h));
    if constexpr (E == X16Float::kBF16)
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16));
    return _mm256_cvtph_ps(v);
  }
}

template <int R, int P, X16Float E>
void tile(const PackedFloatX16& w, int64_t p, const float* A, int64_t lda, float* Y, int64_t ldy) {
  __m256 acc[R][P][2];
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < P; ++i) acc[r][i][0] = acc[r][i][1] = _mm256_setzero_ps();
  const Elem<E>* b[P];
  for (int i = 0; i < P; ++i) b[i] = w.panel<Elem<E>>(p + i);
  const int64_t K = w.K;
  for (int64_t k = 0; k < K; ++k) {
    __m256 lo[P], hi[P];
    for (int i = 0; i < P; ++i) {
      lo[i] = widen8<E>(b[i] + k * 16);
      hi[i] = widen8<E>(b[i] + k * 16 + 8);
    }
    for (int r = 0; r < R; ++r) {
      const __m256 a = _mm256_broadcast_ss(A + r * lda + k);
      for (int i = 0; i < P; ++i) {
        acc[r][i][0] = _mm256_fmadd_ps(a, lo[i], acc[r][i][0]);
        acc[r][i][1] = _mm256_fmadd_ps(a, hi[i], acc[r][i][1]);
      }
    }
  }
  for (int i = 0; i < P; ++i) {
    const int64_t n0 = (p + i) * 16, cols = std::min<int64_t>(16, w.N - n0);
    for (int r = 0; r < R; ++r) {
      float* y = Y + r * ldy + n0;
      if (cols == 16) {
        _mm256_storeu_ps(y, acc[r][i][0]);
        _mm256_storeu_ps(y + 8, acc[r][i][1]);
      } else {
        alignas(32) float t[16];
        _mm256_store_ps(t, acc[r][i][0]);
        _mm256_store_ps(t + 8, acc[r][i][1]);
        std::copy(t, t + cols, y);
      }
    }
  }
}

using TileFn = void (*)(const PackedFloatX16&, int64_t, const float*, int64_t, float*, int64_t);

// Tiles by (rows, panels) with rows * panels <= 4.
template <X16Float E>
TileFn tile_for(int rows, int panels) {
  switch (rows * 8 + panels) {
    case 1 * 8 + 1:
      return tile<1, 1, E>;
    case 1 * 8 + 2:
      return tile<1, 2, E>;
    case 1 * 8 + 3:
      return tile<1, 3, E>;
    case 1 * 8 + 4:
      return tile<1, 4, E>;
    case 2 * 8 + 1:
      return tile<2, 1, E>;
    case 2 * 8 + 2:
      return tile<2, 2, E>;
    case 3 * 8 + 1:
      return tile<3, 1, E>;
    default:
      return tile<4, 1, E>;
  }
}

template <X16Float E>
void gemm(const PackedFloatX16& w, int64_t p0, int64_t p1, int64_t M, const float* A, int64_t lda, float* Y,
          int64_t ldy) {
  // Four panels at a time; inside, rows four at a time over each panel (the
  // panel stays in cache across row groups), then the 1-3 leftover rows over
  // as many panels per pass as keep 4 tiles' accumulators.
  for (int64_t pc = p0; pc < p1; pc += 4) {
    const int np = static_cast<int>(std::min<int64_t>(4, p1 - pc));
    const int64_t full = M / 4 * 4;
    for (int i = 0; i < np; ++i)
      for (int64_t m = 0; m < full; m += 4) tile<4, 1, E>(w, pc + i, A + m * lda, lda, Y + m * ldy, ldy);
    const int rest = static_cast<int>(M - full);
    if (rest == 0) continue;
    const int per = std::max(1, 4 / rest);
    for (int i = 0; i < np; i += per) {
      const int n = std::min(per, np - i);
      tile_for<E>(rest, n)(w, pc + i, A + full * lda, lda, Y + full * ldy, ldy);
    }
  }
}

}  // namespace

void float_x16_gemm_avx2(const PackedFloatX16& w, int64_t p0, int64_t p1, int64_t M, const float* A,
                         int64_t lda, float* Y, int64_t ldy) {
  switch (w.elem) {
    case X16Float::kF32:
      return gemm<X16Float::kF32>(w, p0, p1, M, A, lda, Y, ldy);
    case X16Float::kBF16:
      return gemm<X16Float::kBF16>(w, p0, p1, M, A, lda, Y, ldy);
    case X16Float::kF16:
      return gemm<X16Float::kF16>(w, p0, p1, M, A, lda, Y, ldy);
  }
}

}  // namespace nbits::kernels
