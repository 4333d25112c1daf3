// CompInt8 M=1 GEMV on int4 x16 panels, AVX2: maddubs(unsigned codes, int8
// activations), exact int32 block dots, one fp32 lane per output column.
#include "kernels/x86/x16_avx2_inl.h"

namespace nbits::kernels {

// Software prefetch distance (bytes ahead in the panel stream); 4096 measured
// better than 0 and 1024 here (bench_matmul_nbits, cold weights).
#ifndef NBITS_Q4_PREFETCH
#define NBITS_Q4_PREFETCH 4096
#endif
constexpr int kPrefetch = NBITS_Q4_PREFETCH;

template <bool kAsym, bool kF16>
void qgemv_q4x16_avx2(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
                      const int32_t* qsum, float* y, const float* bias) {
  using namespace avx2;
  const int64_t groups = w.block / 8;
  for (int64_t p = p0; p < p1; ++p) {
    const uint8_t* blk = w.panel(p);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int64_t b = 0; b < w.k_blocks; ++b, blk += w.block_stride) {
      const uint8_t* codes = blk + w.header_bytes;
      const int8_t* q = qa + b * w.block;
      __m256i d0 = _mm256_setzero_si256(), d1 = _mm256_setzero_si256();
      for (int64_t g0 = 0; g0 < groups; g0 += kQ4GroupsPerI16) {
        __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
        const int64_t g1 = std::min(groups, g0 + kQ4GroupsPerI16);
#pragma GCC unroll 4
        for (int64_t g = g0; g < g1; ++g, codes += 64, q += 8) {
          _mm_prefetch(reinterpret_cast<const char*>(codes) + kPrefetch, _MM_HINT_T0);
          const __m256i alo = bcast4(q), ahi = bcast4(q + 4);
          s0 = _mm256_add_epi16(s0, dot16_q4(load_codes(codes), alo, ahi));
          s1 = _mm256_add_epi16(s1, dot16_q4(load_codes(codes + 32), alo, ahi));
        }
        d0 = _mm256_add_epi32(d0, widen(s0));
        d1 = _mm256_add_epi32(d1, widen(s1));
      }
      d0 = correct<kAsym>(d0, blk + w.zp_offset, 8, 0, qsum[b]);
      d1 = correct<kAsym>(d1, blk + w.zp_offset + 8, 8, 0, qsum[b]);
      acc0 = accumulate(acc0, d0, sa[b], load_scales8<kF16>(blk, 0));
      acc1 = accumulate(acc1, d1, sa[b], load_scales8<kF16>(blk, 1));
    }
    store16(y, bias, p * 16, w.N, acc0, acc1);
  }
}

NBITS_X16_INSTANTIATE(qgemv_q4x16_avx2, const PackedX16&, int64_t, int64_t, const int8_t*, const float*,
                      const int32_t*, float*, const float*);

}  // namespace nbits::kernels
