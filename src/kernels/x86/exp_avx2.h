// Inline AVX2+FMA exp and sigmoid of 8 floats (include only from *_avx2.cc files).
// exp: Cephes expf range reduction (x = n ln2 + r, |r| <= ln2/2) and its degree-6
// polynomial, ~1 ulp; 2^n applied as two factors so subnormal results are kept;
// x > 88.73 -> +inf, x < -104 -> 0, NaN -> NaN.
#pragma once

#include <immintrin.h>

namespace nbits::kernels::x86 {

inline __m256 exp8(__m256 x) {
  // min/max return their second operand on NaN: keep x second so NaN passes through.
  x = _mm256_max_ps(_mm256_set1_ps(-110.0f), _mm256_min_ps(_mm256_set1_ps(89.0f), x));
  const __m256 n =
      _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  // Cephes' degree-5 polynomial in Estrin form (shorter dependency chain): exp(r) = 1 + r + r^2 p(r).
  const __m256 r2 = _mm256_mul_ps(r, r);
  const __m256 a = _mm256_fmadd_ps(_mm256_set1_ps(1.6666665459e-1f), r, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 b = _mm256_fmadd_ps(_mm256_set1_ps(8.3334519073e-3f), r, _mm256_set1_ps(4.1665795894e-2f));
  const __m256 c = _mm256_fmadd_ps(_mm256_set1_ps(1.9875691500e-4f), r, _mm256_set1_ps(1.3981999507e-3f));
  const __m256 p = _mm256_fmadd_ps(_mm256_fmadd_ps(c, r2, b), r2, a);
  const __m256 e = _mm256_add_ps(_mm256_fmadd_ps(p, r2, r), _mm256_set1_ps(1.0f));
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i n1 = _mm256_srai_epi32(ni, 1);
  const __m256i n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(e, s1), s2);
}

// 1 / (1 + exp(-x)) as e / (1 + e), e = exp(x), for x < 0 (no cancellation, no overflow).
inline __m256 sigmoid8(__m256 x) {
  const __m256 e = exp8(_mm256_or_ps(x, _mm256_set1_ps(-0.0f)));  // exp(-|x|)
  const __m256 s = _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_add_ps(_mm256_set1_ps(1.0f), e));
  return _mm256_blendv_ps(s, _mm256_mul_ps(e, s), x);  // sign bit of x picks e * s
}

}  // namespace nbits::kernels::x86
