// Half-precision x16 panels (kernels/float_x16_matmul.h) on AVX-512F: one zmm is a
// whole panel row (16 columns), tiles of R rows of A x P panels (R * P <= 8
// accumulators). Each lane is one column's fp32 fma chain over k in order, so
// results are bitwise those of the scalar reference (and of the AVX2 kernel).
#include <immintrin.h>

#include <algorithm>
#include <type_traits>

#include "kernels/x86/float_x16_x86.h"

namespace nbits::kernels {
namespace {

template <X16Float E>
using Elem = std::conditional_t<E == X16Float::kF32, float, uint16_t>;

template <X16Float E>
inline __m512 widen16(const Elem<E>* h) {
  if constexpr (E == X16Float::kF32) {
    return _mm512_loadu_ps(h);
  } else {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h));
    // maskz forms: GCC 12 warns on the _mm512_undefined_* inside the unmasked ones.
    if constexpr (E == X16Float::kBF16)
      return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xFFFF, _mm512_maskz_cvtepu16_epi32(0xFFFF, v), 16));
    return _mm512_maskz_cvtph_ps(0xFFFF, v);
  }
}

template <int R, int P, X16Float E>
void tile(const PackedFloatX16& w, int64_t p, const float* A, int64_t lda, float* Y, int64_t ldy) {
  __m512 acc[R][P];
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < P; ++i) acc[r][i] = _mm512_setzero_ps();
  const Elem<E>* b[P];
  for (int i = 0; i < P; ++i) b[i] = w.panel<Elem<E>>(p + i);
  for (int64_t k = 0; k < w.K; ++k) {
    __m512 row[P];
    for (int i = 0; i < P; ++i) row[i] = widen16<E>(b[i] + k * 16);
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(A[r * lda + k]);
      for (int i = 0; i < P; ++i) acc[r][i] = _mm512_fmadd_ps(a, row[i], acc[r][i]);
    }
  }
  for (int i = 0; i < P; ++i) {
    const int64_t n0 = (p + i) * 16, cols = std::min<int64_t>(16, w.N - n0);
    const __mmask16 m = static_cast<__mmask16>((1u << cols) - 1);
    for (int r = 0; r < R; ++r) _mm512_mask_storeu_ps(Y + r * ldy + n0, m, acc[r][i]);
  }
}

using TileFn = void (*)(const PackedFloatX16&, int64_t, const float*, int64_t, float*, int64_t);

// Tiles by (rows, panels) with rows * panels <= 8.
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
    case 2 * 8 + 3:
      return tile<2, 3, E>;
    case 2 * 8 + 4:
      return tile<2, 4, E>;
    case 3 * 8 + 1:
      return tile<3, 1, E>;
    case 3 * 8 + 2:
      return tile<3, 2, E>;
    default:
      return nullptr;  // not asked for (see gemm)
  }
}

template <X16Float E>
void gemm(const PackedFloatX16& w, int64_t p0, int64_t p1, int64_t M, const float* A, int64_t lda, float* Y,
          int64_t ldy) {
  // Four panels at a time; rows four at a time over pairs of panels (8 accumulators,
  // the panels stay in cache across row groups), then the 1-3 leftover rows over as
  // many panels per pass as keep at most 8 accumulators.
  for (int64_t pc = p0; pc < p1; pc += 4) {
    const int np = static_cast<int>(std::min<int64_t>(4, p1 - pc));
    const int64_t full = M / 4 * 4;
    for (int i = 0; i < np; i += 2) {
      const bool two = i + 1 < np;
      for (int64_t m = 0; m < full; m += 4)
        (two ? tile<4, 2, E> : tile<4, 1, E>)(w, pc + i, A + m * lda, lda, Y + m * ldy, ldy);
    }
    const int rest = static_cast<int>(M - full);
    if (rest == 0) continue;
    const int per = rest == 3 ? 2 : 4;
    for (int i = 0; i < np; i += per) {
      const int n = std::min(per, np - i);
      tile_for<E>(rest, n)(w, pc + i, A + full * lda, lda, Y + full * ldy, ldy);
    }
  }
}

}  // namespace

void float_x16_gemm_avx512(const PackedFloatX16& w, int64_t p0, int64_t p1, int64_t M, const float* A,
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
