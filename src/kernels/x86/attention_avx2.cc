// The flash-attention tile on AVX2+FMA (F16C widens an fp16 cache): 8 query rows per vector.
#include <immintrin.h>

#include "base/fp16.h"
#include "kernels/x86/attention_x86.h"
#include "kernels/x86/exp_avx2.h"

namespace nbits::kernels {
namespace {

struct Avx2 {
  using R = __m256;
  static constexpr int kLanes = 8, kAcc = 8;
  static R zero() { return _mm256_setzero_ps(); }
  static R set1(float x) { return _mm256_set1_ps(x); }
  static R load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, R x) { _mm256_storeu_ps(p, x); }
  static R fmadd(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  static R add(R a, R b) { return _mm256_add_ps(a, b); }
  static R sub(R a, R b) { return _mm256_sub_ps(a, b); }
  static R mul(R a, R b) { return _mm256_mul_ps(a, b); }
  static R max(R a, R b) { return _mm256_max_ps(a, b); }
  static R exp(R x) { return x86::exp8(x); }
  static R lt_select(R a, R b, R x, R y) { return _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, b, _CMP_LT_OQ)); }
  static void widen(const uint16_t* h, float* f, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(f + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i))));
    for (; i < n; ++i) f[i] = fp16_to_float(h[i]);
  }
};

}  // namespace

attn::TileKernels attention_tile_avx2() { return attn::tile_kernels<Avx2>("avx2"); }

}  // namespace nbits::kernels
