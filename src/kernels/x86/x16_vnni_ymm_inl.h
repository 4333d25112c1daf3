// The ymm vector type of the VNNI tile (x16_vnni_tile_inl.h): 8 columns per vector, so a 64-byte
// code group is two vectors and a panel two columns of accumulators. Dp::dp is the vpdpbusd: the
// VEX form of AVX-VNNI (qgemm_x16_avxvnni.cc) or the EVEX form of AVX-512 VNNI with AVX512VL
// (qgemm_x16_ymm_avx512vnni.cc: 256-bit operations on cores that split 512-bit ones in two, and 32
// registers). Include only from a file compiled with one of those ISAs' flags.
#pragma once

#include <immintrin.h>

#include "kernels/x86/x16_avx2_inl.h"

namespace nbits::kernels::x16_vnni {

template <class Dp>
struct Ymm {
  using I = __m256i;
  using F = __m256;
  static constexpr int kLanes = 8;
  static F zero() { return _mm256_setzero_ps(); }
  static I bytes(char c) { return _mm256_set1_epi8(c); }
  static I bcast(int32_t v) { return _mm256_set1_epi32(v); }
  static I load(const uint8_t* p) { return avx2::load_codes(p); }
  static I and_(I a, I b) { return _mm256_and_si256(a, b); }
  static I srli16_4(I x) { return _mm256_srli_epi16(x, 4); }
  static I slli16(I x, int n) { return _mm256_slli_epi16(x, n); }
  static I srli16(I x, int n) { return _mm256_srli_epi16(x, n); }
  static I or_(I a, I b) { return _mm256_or_si256(a, b); }
  static I add32(I a, I b) { return _mm256_add_epi32(a, b); }
  static I dpbusd(I d, I u8, I s8) { return Dp::dp(d, u8, s8); }
  static I zero_points(const uint8_t* p) { return avx2::load_zp8(p); }
  // -zp * qsum: blocks of <= 256 have |qsum| <= 127 * 256, so both factors fit int16 (the high
  // halves of zp32 are 0) and one vpmaddwd gives the exact product; larger blocks take vpmulld.
  template <bool kWide>
  static I neg_zp_times(I zp32, int32_t qsum) {
    const I nq = _mm256_set1_epi32(-qsum);
    if constexpr (kWide) return _mm256_mullo_epi32(zp32, nq);
    return _mm256_madd_epi16(zp32, nq);
  }
  template <bool kF16>
  static F scales(const uint8_t* p) {
    return avx2::load_scales8<kF16>(p, 0);
  }
  static F loadf(const uint8_t* p) { return _mm256_loadu_ps(reinterpret_cast<const float*>(p)); }
  // kLanes fp16 at p, widened exactly; (float)q * d of kLanes int8 at q (super-block scales).
  static F halves(const uint8_t* p) { return avx2::load_scales8<true>(p, 0); }
  static F times_i8(const uint8_t* q, F d) {
    const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v)), d);
  }
  static F accumulate(F acc, I dot, float sa, F scales) { return avx2::accumulate(acc, dot, sa, scales); }
  static F add_min_term(F acc, F mins, float sa, int32_t qsum) {
    return avx2::add_min_term(acc, mins, sa, qsum);
  }
  static void store(float* y, F v, const float* bias, int64_t cnt) { avx2::store8(y, v, bias, cnt); }
};

}  // namespace nbits::kernels::x16_vnni
