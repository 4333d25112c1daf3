// CompFp32 M>=2 GEMM on int4 / int8 x16 panels, AVX-512F: fgemm_q{4,8}x16[h]_6x32_avx512, the
// dequantize-once GEMM of kernels/x86/fgemm_x16_dequant_inl.h on zmm (16 columns a vector: a tile
// is 6 rows x 2 panels).
#include <immintrin.h>

#include "kernels/x86/fgemm_x16_dequant_inl.h"
#include "kernels/x86/x16_fp32_avx512.h"

namespace nbits::kernels {
namespace {

struct Zmm {
  using R = __m512;
  static constexpr int kLanes = 16;
  static R zero() { return _mm512_setzero_ps(); }
  static R set1(float x) { return _mm512_set1_ps(x); }
  static R load(const float* p) { return _mm512_loadu_ps(p); }
  static R fmadd(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
  static R add(R a, R b) { return _mm512_add_ps(a, b); }
  static __mmask16 mask(int n) { return static_cast<__mmask16>((1u << n) - 1); }
  static R load_cols(const float* p, int n) { return _mm512_maskz_loadu_ps(mask(n), p); }
  static void store_cols(float* p, R x, int n) { _mm512_mask_storeu_ps(p, mask(n), x); }
};

}  // namespace

template <bool kAsym, bool kF16>
void fgemm_q4x16_6x32_avx512(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const float* A,
                             int64_t lda, float* Y, int64_t ldy, const float* bias) {
  fgemm_dequant::fgemm<Zmm, 4, kAsym, kF16>(w, p0, p1, M, A, lda, Y, ldy, bias);
}

template <bool kAsym, bool kF16>
void fgemm_q8x16_6x32_avx512(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const float* A,
                             int64_t lda, float* Y, int64_t ldy, const float* bias) {
  fgemm_dequant::fgemm<Zmm, 8, kAsym, kF16>(w, p0, p1, M, A, lda, Y, ldy, bias);
}

NBITS_X16_INSTANTIATE(fgemm_q4x16_6x32_avx512, const PackedX16&, int64_t, int64_t, int64_t, const float*,
                      int64_t, float*, int64_t, const float*);
NBITS_X16_INSTANTIATE(fgemm_q8x16_6x32_avx512, const PackedX16&, int64_t, int64_t, int64_t, const float*,
                      int64_t, float*, int64_t, const float*);

}  // namespace nbits::kernels
