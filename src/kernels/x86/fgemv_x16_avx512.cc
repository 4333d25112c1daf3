// CompFp32 M=1 GEMV on int4 / int8 x16 panels, AVX-512F: fgemv_q{4,8}x16[h]_avx512. The AVX2
// GEMV's computation on whole panels: one 64-byte code group is both 8-column halves at the same
// k (half 0 in the low 256 bits, half 1 in the high), so pshufb (per 128-bit lane) and one
// conversion give the 16 columns of one k in column order. Per block, sum a * q in fp32, then
// y += scale * (sum - zp * sum(a)). Prefetch as the AVX2 GEMV. Scales, zero points and the store
// are the VNNI kernels' (x16_avx512_inl.h). maskz forms: GCC 12 warns on the _mm512_undefined_*
// inside the unmasked ones.
#include <immintrin.h>

#include <algorithm>

#include "kernels/x86/x16_avx512_inl.h"
#include "kernels/x86/x16_fp32_avx512.h"
#include "kernels/x86/x16_twins_avx2_inl.h"

namespace nbits::kernels {
namespace {

using x16_avx512::Zmm;

// avx2::dword_byte_sel in every 128-bit lane (pshufb selects within lanes).
inline __m512i dword_byte_sel(int i) {
  return _mm512_maskz_broadcast_i32x4(0xFFFF, _mm256_castsi256_si128(avx2::dword_byte_sel(i)));
}

template <int Bits, bool kAsym, bool kF16>
void fgemv(const PackedX16& w, int64_t p0, int64_t p1, const float* a, const float* asum, float* y,
           const float* bias) {
  constexpr int kPerGroup = Bits == 4 ? 8 : 4, kHalves = Bits == 4 ? 2 : 1;  // k per group, nibble halves
  const int64_t groups = w.block / kPerGroup;
  const __m512i sel[4] = {dword_byte_sel(0), dword_byte_sel(1), dword_byte_sel(2), dword_byte_sel(3)};
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  for (int64_t p = p0; p < p1; ++p) {
    const uint8_t* blk = w.panel(p);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t b = 0; b < w.k_blocks; ++b, blk += w.block_stride) {
      const uint8_t* codes = blk + w.header_bytes;
      const float* ab = a + b * w.block;
      // Eight fma chains (4 cycles of latency, 2 per cycle): [nibble half or group parity][k % 4].
      __m512 e[2][4];
      for (int c = 0; c < 2; ++c)
        for (int i = 0; i < 4; ++i) e[c][i] = _mm512_setzero_ps();
      auto group = [&](const uint8_t* gc, const float* ga, int c0) {
        _mm_prefetch(reinterpret_cast<const char*>(gc) + avx2::kPrefetchBytes, _MM_HINT_T0);
        const __m512i x = _mm512_loadu_si512(gc);
        __m512i u[2];
        if constexpr (Bits == 4) {
          u[0] = _mm512_and_si512(x, m4);
          u[1] = _mm512_and_si512(_mm512_srli_epi16(x, 4), m4);
        } else {
          u[0] = x;
        }
        for (int h = 0; h < kHalves; ++h)
          for (int i = 0; i < 4; ++i)
            e[c0 + h][i] = _mm512_fmadd_ps(
                _mm512_set1_ps(ga[i + 4 * h]),
                _mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_shuffle_epi8(u[h], sel[i])), e[c0 + h][i]);
      };
      int64_t g = 0;
      if constexpr (Bits == 4) {
        for (; g < groups; ++g, codes += 64, ab += kPerGroup) group(codes, ab, 0);
      } else {
        for (; g + 2 <= groups; g += 2, codes += 128, ab += 2 * kPerGroup) {
          group(codes, ab, 0);
          group(codes + 64, ab + kPerGroup, 1);
        }
        for (; g < groups; ++g, codes += 64, ab += kPerGroup) group(codes, ab, 0);
      }
      const __m512 t =
          _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(e[0][0], e[1][0]), _mm512_add_ps(e[0][1], e[1][1])),
                        _mm512_add_ps(_mm512_add_ps(e[0][2], e[1][2]), _mm512_add_ps(e[0][3], e[1][3])));
      const __m512 z = kAsym ? _mm512_maskz_cvtepi32_ps(0xFFFF, Zmm::zero_points(blk + w.zp_offset))
                             : _mm512_set1_ps(static_cast<float>(w.default_zp()));
      acc = _mm512_fmadd_ps(Zmm::scales<kF16>(blk), _mm512_fnmadd_ps(z, _mm512_set1_ps(asum[b]), t), acc);
    }
    const int64_t n0 = p * 16;
    Zmm::store(y + n0, acc, bias != nullptr ? bias + n0 : nullptr, std::min<int64_t>(16, w.N - n0));
  }
}

}  // namespace

template <bool kAsym, bool kF16>
void fgemv_q4x16_avx512(const PackedX16& w, int64_t p0, int64_t p1, const float* a, const float* asum,
                        float* y, const float* bias) {
  fgemv<4, kAsym, kF16>(w, p0, p1, a, asum, y, bias);
}

template <bool kAsym, bool kF16>
void fgemv_q8x16_avx512(const PackedX16& w, int64_t p0, int64_t p1, const float* a, const float* asum,
                        float* y, const float* bias) {
  fgemv<8, kAsym, kF16>(w, p0, p1, a, asum, y, bias);
}

NBITS_X16_INSTANTIATE(fgemv_q4x16_avx512, const PackedX16&, int64_t, int64_t, const float*, const float*,
                      float*, const float*);
NBITS_X16_INSTANTIATE(fgemv_q8x16_avx512, const PackedX16&, int64_t, int64_t, const float*, const float*,
                      float*, const float*);

}  // namespace nbits::kernels
