// fp32 vector basics on ymm (AVX2 + FMA) and zmm (AVX-512F), the V of the kernels written once
// over a vector type (the attention tile, the dequantize-once CompFp32 GEMM), which extend them.
// Include only from files compiled with AVX2 + FMA (F32Zmm exists where AVX-512F is on too).
#pragma once

#include <immintrin.h>

namespace nbits::kernels::x86 {

struct F32Ymm {
  using R = __m256;
  static constexpr int kLanes = 8;
  static R zero() { return _mm256_setzero_ps(); }
  static R set1(float x) { return _mm256_set1_ps(x); }
  static R load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, R x) { _mm256_storeu_ps(p, x); }
  static R fmadd(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  static R add(R a, R b) { return _mm256_add_ps(a, b); }
  static R sub(R a, R b) { return _mm256_sub_ps(a, b); }
  static R mul(R a, R b) { return _mm256_mul_ps(a, b); }
  static R max(R a, R b) { return _mm256_max_ps(a, b); }
  static __m256i lanes_below(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  // Lanes >= n zero (nothing read there); lanes < n only.
  static R load_partial(const float* p, int n) { return _mm256_maskload_ps(p, lanes_below(n)); }
  static void store_partial(float* p, R x, int n) { _mm256_maskstore_ps(p, lanes_below(n), x); }
};

#ifdef __AVX512F__
// maskz forms: GCC 12 warns on the _mm512_undefined_* inside the unmasked ones.
struct F32Zmm {
  using R = __m512;
  static constexpr int kLanes = 16;
  static R zero() { return _mm512_setzero_ps(); }
  static R set1(float x) { return _mm512_set1_ps(x); }
  static R load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, R x) { _mm512_storeu_ps(p, x); }
  static R fmadd(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
  static R add(R a, R b) { return _mm512_add_ps(a, b); }
  static R sub(R a, R b) { return _mm512_sub_ps(a, b); }
  static R mul(R a, R b) { return _mm512_mul_ps(a, b); }
  static R max(R a, R b) { return _mm512_maskz_max_ps(0xFFFF, a, b); }
  static R load_partial(const float* p, int n) {
    return _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << n) - 1), p);
  }
  static void store_partial(float* p, R x, int n) {
    _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << n) - 1), x);
  }
};
#endif

}  // namespace nbits::kernels::x86
