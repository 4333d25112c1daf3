// CompInt8 M>=2 GEMM on int4 x16 panels, AVX2: tiles of up to 4 rows x 8
// columns; each code group is unpacked once and used for every row of the tile.
#include "kernels/x86/x16_avx2_inl.h"

namespace nbits::kernels {
namespace {

template <int R, bool kAsym, bool kF16>
void tile(const PackedX16& w, int64_t p, int h, const int8_t* qa, const float* sa, const int32_t* qsum,
          float* Y, int64_t ldy, const float* bias) {
  using namespace avx2;
  const int64_t kp = w.k_blocks * w.block, groups = w.block / 8;
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  __m256 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  const uint8_t* blk = w.panel(p);
  for (int64_t b = 0; b < w.k_blocks; ++b, blk += w.block_stride) {
    const uint8_t* codes = blk + w.header_bytes + 32 * h;
    __m256i d[R];
    for (int r = 0; r < R; ++r) d[r] = _mm256_setzero_si256();
    for (int64_t g0 = 0; g0 < groups; g0 += kQ4GroupsPerI16) {
      __m256i s16[R];
      for (int r = 0; r < R; ++r) s16[r] = _mm256_setzero_si256();
      const int64_t g1 = std::min(groups, g0 + kQ4GroupsPerI16);
      for (int64_t g = g0; g < g1; ++g, codes += 64) {
        const __m256i x = load_codes(codes);
        const __m256i lo = _mm256_and_si256(x, m4);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(x, 4), m4);
        const int8_t* q = qa + b * w.block + g * 8;
        for (int r = 0; r < R; ++r, q += kp)
          s16[r] = _mm256_add_epi16(s16[r], _mm256_add_epi16(_mm256_maddubs_epi16(lo, bcast4(q)),
                                                             _mm256_maddubs_epi16(hi, bcast4(q + 4))));
      }
      for (int r = 0; r < R; ++r) d[r] = _mm256_add_epi32(d[r], widen(s16[r]));
    }
    const __m256 scales = load_scales8<kF16>(blk, h);
    for (int r = 0; r < R; ++r) {
      const int64_t i = r * w.k_blocks + b;
      acc[r] =
          accumulate(acc[r], correct<kAsym>(d[r], blk + w.zp_offset + 8 * h, 8, 0, qsum[i]), sa[i], scales);
    }
  }
  const int64_t n0 = p * 16 + 8 * h;
  if (n0 >= w.N) return;
  const int64_t cnt = std::min<int64_t>(8, w.N - n0);
  for (int r = 0; r < R; ++r) store8(Y + r * ldy + n0, acc[r], bias != nullptr ? bias + n0 : nullptr, cnt);
}

}  // namespace

template <bool kAsym, bool kF16>
void qgemm_q4x16_4x8_avx2(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,
                          const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  const int64_t kp = w.k_blocks * w.block, kb = w.k_blocks;
  avx2::for_each_tile_4x8(p0, p1, M, [&](int64_t p, int64_t m, int h, auto rows) {
    tile<decltype(rows)::value, kAsym, kF16>(w, p, h, qa + m * kp, sa + m * kb, qsum + m * kb, Y + m * ldy,
                                             ldy, bias);
  });
}

NBITS_X16_INSTANTIATE(qgemm_q4x16_4x8_avx2, const PackedX16&, int64_t, int64_t, int64_t, const int8_t*,
                      const float*, const int32_t*, float*, int64_t, const float*);

}  // namespace nbits::kernels
