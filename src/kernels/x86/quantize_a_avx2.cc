// CompInt8 activation quantization with AVX2: the same float operations as
// quant::quantize_row_blocks (max |a|, amax/127, 127/amax, round half to even),
// so qa and scales are bit-identical; also returns integer block sums.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/x86/x16_avx2.h"

namespace nbits::kernels {

void quantize_row_blocks_avx2(const float* a, int64_t K, int block, int8_t* qa, float* sa, int32_t* qsum) {
  const int64_t kb = (K + block - 1) / block;
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256i lim = _mm256_set1_epi32(127), nlim = _mm256_set1_epi32(-127);
  for (int64_t b = 0; b < kb; ++b) {
    const float* x = a + b * block;
    int8_t* q = qa + b * block;
    const int64_t n = std::min<int64_t>(block, K - b * block);
    __m256 vmax = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) vmax = _mm256_max_ps(vmax, _mm256_and_ps(_mm256_loadu_ps(x + j), absmask));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
    float amax = _mm_cvtss_f32(m4);
    for (int64_t t = j; t < n; ++t) amax = std::max(amax, std::fabs(x[t]));
    const float scale = amax / 127.0f;
    const float inv = amax != 0.0f ? 127.0f / amax : 0.0f;
    const __m256 vinv = _mm256_set1_ps(inv);
    __m256i vsum = _mm256_setzero_si256();
    for (j = 0; j + 8 <= n; j += 8) {
      const __m256 r = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + j), vinv),
                                       _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      __m256i iv = _mm256_min_epi32(_mm256_max_epi32(_mm256_cvtps_epi32(r), nlim), lim);
      vsum = _mm256_add_epi32(vsum, iv);
      const __m128i p16 = _mm_packs_epi32(_mm256_castsi256_si128(iv), _mm256_extracti128_si256(iv, 1));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(q + j), _mm_packs_epi16(p16, p16));
    }
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(vsum), _mm256_extracti128_si256(vsum, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
    int32_t sum = _mm_cvtsi128_si32(s4);
    for (; j < n; ++j) {
      const int32_t v = std::clamp(static_cast<int32_t>(std::nearbyint(x[j] * inv)), -127, 127);
      q[j] = static_cast<int8_t>(v);
      sum += v;
    }
    if (n < block) std::memset(q + n, 0, static_cast<size_t>(block - n));
    sa[b] = scale;
    qsum[b] = sum;
  }
}

}  // namespace nbits::kernels
