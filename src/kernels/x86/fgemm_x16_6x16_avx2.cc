// CompFp32 M>=2 GEMM on int4 / int8 x16 panels, AVX2: fgemm_q{4,8}x16[h]_6x16_avx2, the
// dequantize-once GEMM of kernels/x86/fgemm_x16_dequant_inl.h on ymm (8 columns a vector: a tile
// is 6 rows x 1 panel, 12 of the 16 registers); below 4 rows the 4x8 tile (fgemm_q4x16_4x8_avx2).
#include <immintrin.h>

#include "kernels/x86/fgemm_x16_dequant_inl.h"

namespace nbits::kernels {
namespace {

struct Ymm {
  using R = __m256;
  static constexpr int kLanes = 8;
  static R zero() { return _mm256_setzero_ps(); }
  static R set1(float x) { return _mm256_set1_ps(x); }
  static R load(const float* p) { return _mm256_loadu_ps(p); }
  static R fmadd(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  static R add(R a, R b) { return _mm256_add_ps(a, b); }
  // Lanes i < n set (sign bit) in an int mask for maskload / maskstore.
  static __m256i mask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static R load_cols(const float* p, int n) { return n == 8 ? load(p) : _mm256_maskload_ps(p, mask(n)); }
  static void store_cols(float* p, R x, int n) {
    if (n == 8)
      _mm256_storeu_ps(p, x);
    else
      _mm256_maskstore_ps(p, mask(n), x);
  }
};

}  // namespace

template <bool kAsym, bool kF16>
void fgemm_q4x16_6x16_avx2(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const float* A, int64_t lda,
                           float* Y, int64_t ldy, const float* bias) {
  fgemm_dequant::fgemm<Ymm, 4, kAsym, kF16>(w, p0, p1, M, A, lda, Y, ldy, bias);
}

template <bool kAsym, bool kF16>
void fgemm_q8x16_6x16_avx2(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const float* A, int64_t lda,
                           float* Y, int64_t ldy, const float* bias) {
  fgemm_dequant::fgemm<Ymm, 8, kAsym, kF16>(w, p0, p1, M, A, lda, Y, ldy, bias);
}

NBITS_X16_INSTANTIATE(fgemm_q4x16_6x16_avx2, const PackedX16&, int64_t, int64_t, int64_t, const float*,
                      int64_t, float*, int64_t, const float*);
NBITS_X16_INSTANTIATE(fgemm_q8x16_6x16_avx2, const PackedX16&, int64_t, int64_t, int64_t, const float*,
                      int64_t, float*, int64_t, const float*);

}  // namespace nbits::kernels
