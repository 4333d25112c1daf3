// CompFp32 M=1 GEMV on int4 x16 panels, AVX2+FMA: per block, sum a*q in fp32
// (codes unpacked with pshufb), then y += scale * (sum - zp * sum(a)).
#include "kernels/x86/x16_avx2_inl.h"

namespace nbits::kernels {

template <bool kAsym, bool kF16>
void fgemv_q4x16_avx2(const PackedX16& w, int64_t p0, int64_t p1, const float* a, const float* asum, float* y,
                      const float* bias) {
  using namespace avx2;
  const int64_t groups = w.block / 8;
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  const __m256i sel[4] = {dword_byte_sel(0), dword_byte_sel(1), dword_byte_sel(2), dword_byte_sel(3)};
  for (int64_t p = p0; p < p1; ++p) {
    const uint8_t* blk = w.panel(p);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int64_t b = 0; b < w.k_blocks; ++b, blk += w.block_stride) {
      const uint8_t* codes = blk + w.header_bytes;
      const float* ab = a + b * w.block;
      __m256 e[4], f[4];
      for (int i = 0; i < 4; ++i) e[i] = f[i] = _mm256_setzero_ps();
      for (int64_t g = 0; g < groups; ++g, codes += 64, ab += 8) {
        const __m256i x0 = load_codes(codes);
        const __m256i x1 = load_codes(codes + 32);
        const __m256i lo0 = _mm256_and_si256(x0, m4), hi0 = _mm256_and_si256(_mm256_srli_epi16(x0, 4), m4);
        const __m256i lo1 = _mm256_and_si256(x1, m4), hi1 = _mm256_and_si256(_mm256_srli_epi16(x1, 4), m4);
        for (int i = 0; i < 4; ++i) {
          const __m256 al = _mm256_set1_ps(ab[i]), ah = _mm256_set1_ps(ab[i + 4]);
          e[i] = _mm256_fmadd_ps(al, _mm256_cvtepi32_ps(_mm256_shuffle_epi8(lo0, sel[i])), e[i]);
          f[i] = _mm256_fmadd_ps(al, _mm256_cvtepi32_ps(_mm256_shuffle_epi8(lo1, sel[i])), f[i]);
          e[i] = _mm256_fmadd_ps(ah, _mm256_cvtepi32_ps(_mm256_shuffle_epi8(hi0, sel[i])), e[i]);
          f[i] = _mm256_fmadd_ps(ah, _mm256_cvtepi32_ps(_mm256_shuffle_epi8(hi1, sel[i])), f[i]);
        }
      }
      const __m256 as = _mm256_set1_ps(asum[b]);
      const __m256 t0 = _mm256_add_ps(_mm256_add_ps(e[0], e[1]), _mm256_add_ps(e[2], e[3]));
      const __m256 t1 = _mm256_add_ps(_mm256_add_ps(f[0], f[1]), _mm256_add_ps(f[2], f[3]));
      const __m256 z0 = zp_ps<kAsym>(blk + w.zp_offset, 8), z1 = zp_ps<kAsym>(blk + w.zp_offset + 8, 8);
      acc0 = _mm256_fmadd_ps(load_scales8<kF16>(blk, 0), _mm256_fnmadd_ps(z0, as, t0), acc0);
      acc1 = _mm256_fmadd_ps(load_scales8<kF16>(blk, 1), _mm256_fnmadd_ps(z1, as, t1), acc1);
    }
    store16(y, bias, p * 16, w.N, acc0, acc1);
  }
}

NBITS_X16_INSTANTIATE(fgemv_q4x16_avx2, const PackedX16&, int64_t, int64_t, const float*, const float*,
                      float*, const float*);

}  // namespace nbits::kernels
