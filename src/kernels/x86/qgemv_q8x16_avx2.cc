// CompInt8 M=1 GEMV on int8 x16 panels, AVX2: codes shifted to q-128 and the
// sign trick (maddubs(|w|, sign(a, w))), exact int32 block dots.
#include "kernels/x86/x16_avx2_inl.h"

namespace nbits::kernels {

template <bool kAsym, bool kF16>
void qgemv_q8x16_avx2(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
                      const int32_t* qsum, float* y, const float* bias) {
  using namespace avx2;
  const int64_t groups = w.block / 4;
  for (int64_t p = p0; p < p1; ++p) {
    const uint8_t* blk = w.panel(p);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int64_t b = 0; b < w.k_blocks; ++b, blk += w.block_stride) {
      const uint8_t* codes = blk + w.header_bytes;
      const int8_t* q = qa + b * w.block;
      __m256i d0 = _mm256_setzero_si256(), d1 = _mm256_setzero_si256();
#pragma GCC unroll 4
      for (int64_t g = 0; g < groups; ++g, codes += 64, q += 4) {
        _mm_prefetch(reinterpret_cast<const char*>(codes) + 4096, _MM_HINT_T0);
        const __m256i a = bcast4(q);
        d0 = _mm256_add_epi32(d0, dot_q8s(load_codes(codes), a));
        d1 = _mm256_add_epi32(d1, dot_q8s(load_codes(codes + 32), a));
      }
      d0 = correct<kAsym>(d0, blk + w.zp_offset, 128, 128, qsum[b]);
      d1 = correct<kAsym>(d1, blk + w.zp_offset + 8, 128, 128, qsum[b]);
      acc0 = accumulate(acc0, d0, sa[b], load_scales8<kF16>(blk, 0));
      acc1 = accumulate(acc1, d1, sa[b], load_scales8<kF16>(blk, 1));
    }
    store16(y, bias, p * 16, w.N, acc0, acc1);
  }
}

NBITS_X16_INSTANTIATE(qgemv_q8x16_avx2, const PackedX16&, int64_t, int64_t, const int8_t*, const float*,
                      const int32_t*, float*, const float*);

}  // namespace nbits::kernels
