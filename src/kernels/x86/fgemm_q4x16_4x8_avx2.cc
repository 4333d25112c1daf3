// CompFp32 M>=2 GEMM on int4 x16 panels, AVX2+FMA: tiles of up to 4 rows x 8
// columns; each weight is dequantized once, (q - zp) * scale as the reference
// does, and used for every row of the tile.
#include "kernels/x86/x16_avx2_inl.h"

namespace nbits::kernels {
namespace {

template <int R, bool kAsym, bool kF16>
void tile(const PackedX16& w, int64_t p, int h, const float* A, int64_t lda, float* Y, int64_t ldy,
          const float* bias) {
  using namespace avx2;
  const int64_t groups = w.block / 8;
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  const __m256i sel[4] = {dword_byte_sel(0), dword_byte_sel(1), dword_byte_sel(2), dword_byte_sel(3)};
  __m256 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  const uint8_t* blk = w.panel(p);
  for (int64_t b = 0; b < w.k_blocks; ++b, blk += w.block_stride) {
    const uint8_t* codes = blk + w.header_bytes + 32 * h;
    const __m256 s = load_scales8<kF16>(blk, h);
    const __m256 z = zp_ps<kAsym>(blk + w.zp_offset + 8 * h, 8);
    const float* ab = A + b * w.block;
    for (int64_t g = 0; g < groups; ++g, codes += 64, ab += 8) {
      const __m256i x = load_codes(codes);
      const __m256i nib[2] = {_mm256_and_si256(x, m4), _mm256_and_si256(_mm256_srli_epi16(x, 4), m4)};
      for (int j = 0; j < 8; ++j) {
        const __m256 q = _mm256_cvtepi32_ps(_mm256_shuffle_epi8(nib[j >> 2], sel[j & 3]));
        const __m256 wv = _mm256_mul_ps(_mm256_sub_ps(q, z), s);
        for (int r = 0; r < R; ++r)
          acc[r][j & 1] = _mm256_fmadd_ps(_mm256_set1_ps(ab[r * lda + j]), wv, acc[r][j & 1]);
      }
    }
  }
  const int64_t n0 = p * 16 + 8 * h;
  if (n0 >= w.N) return;
  const int64_t cnt = std::min<int64_t>(8, w.N - n0);
  for (int r = 0; r < R; ++r)
    store8(Y + r * ldy + n0, _mm256_add_ps(acc[r][0], acc[r][1]), bias != nullptr ? bias + n0 : nullptr, cnt);
}

}  // namespace

template <bool kAsym, bool kF16>
void fgemm_q4x16_4x8_avx2(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const float* A, int64_t lda,
                          float* Y, int64_t ldy, const float* bias) {
  avx2::for_each_tile_4x8(p0, p1, M, [&](int64_t p, int64_t m, int h, auto rows) {
    tile<decltype(rows)::value, kAsym, kF16>(w, p, h, A + m * lda, lda, Y + m * ldy, ldy, bias);
  });
}

NBITS_X16_INSTANTIATE(fgemm_q4x16_4x8_avx2, const PackedX16&, int64_t, int64_t, int64_t, const float*,
                      int64_t, float*, int64_t, const float*);

}  // namespace nbits::kernels
