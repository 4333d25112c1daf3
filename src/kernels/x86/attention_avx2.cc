// The flash-attention tile on AVX2+FMA (F16C widens an fp16 cache, AVX2 an int8 one): 8 query rows per
// vector; and the decode kernel, 8 keys per vector.
#include <immintrin.h>

#include "base/fp16.h"
#include "kernels/x86/attention_x86.h"
#include "kernels/x86/exp_avx2.h"
#include "kernels/x86/f32_vec_inl.h"

namespace nbits::kernels {
namespace {

struct Avx2 : x86::F32Ymm {
  static constexpr int kAcc = 8;
  static R exp(R x) { return x86::exp8(x); }
  static R lt_select(R a, R b, R x, R y) { return _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, b, _CMP_LT_OQ)); }
  static void widen(const uint16_t* h, float* f, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(f + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i))));
    for (; i < n; ++i) f[i] = fp16_to_float(h[i]);
  }
  // int8 cache rows (kernels/attention.h): code * scale, 8 codes sign-extended per step.
  static void widen_q8(const int8_t* rows, float* f, int64_t nrows, int64_t H) {
    attn::widen_q8_rows<8>(rows, f, nrows, H, [](const int8_t* c, float scale, float* out) {
      const __m256i w = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(c)));
      _mm256_storeu_ps(out, _mm256_mul_ps(_mm256_cvtepi32_ps(w), _mm256_set1_ps(scale)));
    });
  }
  // The decode kernel's: 6 heads x 2 column vectors of accumulators (of the 16 registers).
  static constexpr int kDecodeHeads = 6, kDecodeQRegs = 4;
  // fold4: hadd pairs twice; half h of the result holds the sums of a[0..3] over their half h.
  // fold_groups: the halves of the 2 groups added.
  static R fold4(const R* a) {
    return _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
  }
  static R fold_groups(const R* z) {
    return _mm256_add_ps(_mm256_permute2f128_ps(z[0], z[1], 0x20), _mm256_permute2f128_ps(z[0], z[1], 0x31));
  }
  static float hmax(R x) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
  }
  static float hsum(R x) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static R div(R a, R b) { return _mm256_div_ps(a, b); }
  static R iota() { return _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7); }
};

}  // namespace

attn::TileKernels attention_tile_avx2() { return attn::tile_kernels<Avx2>("avx2"); }
attn::DecodeKernels attention_decode_avx2() { return attn::decode_kernels<Avx2>(); }

}  // namespace nbits::kernels
