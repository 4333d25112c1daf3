// Inline AVX-512 helpers of the x16 CompInt8 kernels (the VNNI and the AMX GEMM): block scales,
// the zero-point term and the reference-order fp32 accumulation. Include only from files built
// with the AVX-512 flags (*_avx512vnni.cc, *_amx.cc).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace nbits::kernels::x16_avx512 {

// Scales of the 16 columns of the block at `blk`, as floats (fp16 widened exactly). maskz forms
// here and in Zmm::zero_points: GCC 12 warns on the _mm512_undefined_* inside the unmasked ones
// where the caller's code lets it (the CompFp32 GEMV).
template <bool kF16>
inline __m512 load_scales16(const uint8_t* blk) {
  if constexpr (kF16)
    return _mm512_maskz_cvtph_ps(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
  return _mm512_loadu_ps(reinterpret_cast<const float*>(blk));
}

// -zp * qsum for the 16 columns (zp32: zero points as int32). Blocks of <= 256
// (kWide false) have |qsum| <= 127 * 256, so both factors fit int16 (the high
// halves of zp32 are 0) and one vpmaddwd gives the exact product; larger blocks
// take vpmulld.
template <bool kWide>
inline __m512i neg_zp_times(__m512i zp32, int32_t qsum) {
  const __m512i nq = _mm512_set1_epi32(-qsum);
  if constexpr (kWide) return _mm512_mullo_epi32(zp32, nq);
  return _mm512_madd_epi16(zp32, nq);
}

// acc += float(dot) * (sa * scales): the reference's exact operation order. The
// empty asm keeps the compiler from contracting the multiply and add into an FMA.
inline __m512 accumulate(__m512 acc, __m512i dot, float sa, __m512 scales) {
  const __m512 s = _mm512_mul_ps(_mm512_set1_ps(sa), scales);
  __m512 prod = _mm512_mul_ps(_mm512_cvtepi32_ps(dot), s);
  __asm__("" : "+v"(prod));
  return _mm512_add_ps(acc, prod);
}

// acc += mins * (sa * float(qsum)), the reference's min term (no contraction either).
inline __m512 add_min_term(__m512 acc, __m512 mins, float sa, int32_t qsum) {
  __m512 prod = _mm512_mul_ps(mins, _mm512_set1_ps(sa * static_cast<float>(qsum)));
  __asm__("" : "+v"(prod));
  return _mm512_add_ps(acc, prod);
}

// The vector type of the VNNI tile (x16_vnni_tile_inl.h): a zmm, 16 columns, one 64-byte code
// group per vector.
struct Zmm {
  using I = __m512i;
  using F = __m512;
  static constexpr int kLanes = 16;
  static F zero() { return _mm512_setzero_ps(); }
  static I bytes(char c) { return _mm512_set1_epi8(c); }
  static I bcast(int32_t v) { return _mm512_set1_epi32(v); }
  static I load(const uint8_t* p) { return _mm512_loadu_si512(p); }
  static I and_(I a, I b) { return _mm512_and_si512(a, b); }
  static I srli16_4(I x) { return _mm512_srli_epi16(x, 4); }
  static I slli16(I x, int n) { return _mm512_slli_epi16(x, static_cast<unsigned>(n)); }
  static I srli16(I x, int n) { return _mm512_srli_epi16(x, static_cast<unsigned>(n)); }
  static I or_(I a, I b) { return _mm512_or_si512(a, b); }
  static I add32(I a, I b) { return _mm512_add_epi32(a, b); }
  static I dpbusd(I d, I u8, I s8) { return _mm512_dpbusd_epi32(d, u8, s8); }
  // The 16 zero points (bytes at p) as int32.
  static I zero_points(const uint8_t* p) {
    return _mm512_maskz_cvtepu8_epi32(0xFFFF, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  template <bool kWide>
  static I neg_zp_times(I zp32, int32_t qsum) {
    return x16_avx512::neg_zp_times<kWide>(zp32, qsum);
  }
  template <bool kF16>
  static F scales(const uint8_t* p) {
    return load_scales16<kF16>(p);
  }
  static F loadf(const uint8_t* p) { return _mm512_loadu_ps(reinterpret_cast<const float*>(p)); }
  // 16 fp16 at p, widened exactly; (float)q * d of 16 int8 at q (super-block scales).
  static F halves(const uint8_t* p) { return load_scales16<true>(p); }
  static F times_i8(const uint8_t* q, F d) {
    const __m512i v =
        _mm512_maskz_cvtepi8_epi32(0xFFFF, _mm_loadu_si128(reinterpret_cast<const __m128i*>(q)));
    return _mm512_mul_ps(_mm512_cvtepi32_ps(v), d);
  }
  static F accumulate(F acc, I dot, float sa, F scales) {
    return x16_avx512::accumulate(acc, dot, sa, scales);
  }
  static F add_min_term(F acc, F mins, float sa, int32_t qsum) {
    return x16_avx512::add_min_term(acc, mins, sa, qsum);
  }
  // y[0, cnt) = v (+ bias[0, cnt)).
  static void store(float* y, F v, const float* bias, int64_t cnt) {
    const __mmask16 mask = static_cast<__mmask16>((1u << cnt) - 1);
    if (bias != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, bias));
    _mm512_mask_storeu_ps(y, mask, v);
  }
};

}  // namespace nbits::kernels::x16_avx512
