// The flash-attention tile on AVX-512F (F16C widens an fp16 cache): 16 query rows per vector,
// register blocks of 16 accumulators (of the 32 registers); and the decode kernel, 16 keys per vector.
#include <immintrin.h>

#include "base/fp16.h"
#include "kernels/x86/attention_x86.h"
#include "kernels/x86/f32_vec_inl.h"

namespace nbits::kernels {
namespace {

// exp of 16 floats: exp_avx2.h's Cephes reduction and polynomial, 2^n by scalef (keeps subnormal
// results, overflows to +inf); x < -104 -> 0, NaN -> NaN. maskz forms: GCC 12 warns on the
// _mm512_undefined_* inside the unmasked ones.
inline __m512 exp16(__m512 x) {
  x = _mm512_maskz_max_ps(0xFFFF, _mm512_set1_ps(-110.0f),
                          _mm512_maskz_min_ps(0xFFFF, _mm512_set1_ps(89.0f), x));
  const __m512 n = _mm512_maskz_roundscale_ps(0xFFFF, _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  const __m512 r2 = _mm512_mul_ps(r, r);
  const __m512 a = _mm512_fmadd_ps(_mm512_set1_ps(1.6666665459e-1f), r, _mm512_set1_ps(5.0000001201e-1f));
  const __m512 b = _mm512_fmadd_ps(_mm512_set1_ps(8.3334519073e-3f), r, _mm512_set1_ps(4.1665795894e-2f));
  const __m512 c = _mm512_fmadd_ps(_mm512_set1_ps(1.9875691500e-4f), r, _mm512_set1_ps(1.3981999507e-3f));
  const __m512 p = _mm512_fmadd_ps(_mm512_fmadd_ps(c, r2, b), r2, a);
  const __m512 e = _mm512_add_ps(_mm512_fmadd_ps(p, r2, r), _mm512_set1_ps(1.0f));
  return _mm512_maskz_scalef_ps(0xFFFF, e, n);
}

struct Avx512 : x86::F32Zmm {
  static constexpr int kAcc = 16;
  static R exp(R x) { return exp16(x); }
  static R lt_select(R a, R b, R x, R y) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_LT_OQ), y, x);
  }
  static void widen(const uint16_t* h, float* f, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
      _mm512_storeu_ps(
          f + i, _mm512_maskz_cvtph_ps(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + i))));
    for (; i < n; ++i) f[i] = fp16_to_float(h[i]);
  }
  // int8 cache rows (kernels/attention.h): code * scale, 16 codes sign-extended per step.
  static void widen_q8(const int8_t* rows, float* f, int64_t nrows, int64_t H) {
    attn::widen_q8_rows<16>(rows, f, nrows, H, [](const int8_t* c, float scale, float* out) {
      const __m512i w =
          _mm512_maskz_cvtepi8_epi32(0xFFFF, _mm_loadu_si128(reinterpret_cast<const __m128i*>(c)));
      _mm512_storeu_ps(out, _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(0xFFFF, w), _mm512_set1_ps(scale)));
    });
  }
  // The decode kernel's: 8 heads x 2 column vectors of accumulators.
  static constexpr int kDecodeHeads = 8, kDecodeQRegs = 8;
  // fold4: pairs added within 128-bit lanes (unpack ps, then pd): quarter k of the result holds the
  // sums of a[0..3] over their quarter k. fold_groups: the four quarters of each of the 4 groups
  // folded by shuffle_f32x4. 30 shuffles, 15 adds for 16 keys.
  static R fold4(const R* a) {
    constexpr __mmask16 all = 0xFFFF;
    const __m512 t0 =
        _mm512_add_ps(_mm512_maskz_unpacklo_ps(all, a[0], a[1]), _mm512_maskz_unpackhi_ps(all, a[0], a[1]));
    const __m512 t1 =
        _mm512_add_ps(_mm512_maskz_unpacklo_ps(all, a[2], a[3]), _mm512_maskz_unpackhi_ps(all, a[2], a[3]));
    const __m512d d0 = _mm512_castps_pd(t0), d1 = _mm512_castps_pd(t1);
    return _mm512_add_ps(_mm512_castpd_ps(_mm512_maskz_unpacklo_pd(0xFF, d0, d1)),
                         _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(0xFF, d0, d1)));
  }
  static R fold_groups(const R* z) {
    constexpr __mmask16 all = 0xFFFF;
    const __m512 u0 = _mm512_add_ps(_mm512_maskz_shuffle_f32x4(all, z[0], z[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                    _mm512_maskz_shuffle_f32x4(all, z[0], z[1], _MM_SHUFFLE(3, 1, 3, 1)));
    const __m512 u1 = _mm512_add_ps(_mm512_maskz_shuffle_f32x4(all, z[2], z[3], _MM_SHUFFLE(2, 0, 2, 0)),
                                    _mm512_maskz_shuffle_f32x4(all, z[2], z[3], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_add_ps(_mm512_maskz_shuffle_f32x4(all, u0, u1, _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_maskz_shuffle_f32x4(all, u0, u1, _MM_SHUFFLE(3, 1, 3, 1)));
  }
  // The lower and upper 256 bits (maskz forms: GCC 12 warns on the casts too).
  static __m256 lower(R x) { return _mm512_maskz_extractf32x8_ps(0xFF, x, 0); }
  static __m256 upper(R x) { return _mm512_maskz_extractf32x8_ps(0xFF, x, 1); }
  static float hmax(R x) {
    const __m256 h = _mm256_max_ps(lower(x), upper(x));
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
  }
  static float hsum(R x) {
    const __m256 h = _mm256_add_ps(lower(x), upper(x));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static R div(R a, R b) { return _mm512_div_ps(a, b); }
  static R iota() { return _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15); }
};

}  // namespace

attn::TileKernels attention_tile_avx512() { return attn::tile_kernels<Avx512>("avx512"); }
attn::DecodeKernels attention_decode_avx512() { return attn::decode_kernels<Avx512>(); }

}  // namespace nbits::kernels
