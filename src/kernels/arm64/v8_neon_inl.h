// One AVX2 register as two NEON float32x4 (V8) and the operations the NEON ports of AVX2 code share
// (kernels/arm64/vector_ops_neon.cc, kernels/arm64/attention_neon.cc): loads and masked tails,
// arithmetic with maxps semantics, and exp8, each the same fused operations as the AVX2 code so the
// ports compute its bits. Include only from arm64 files.
#pragma once

#include <arm_neon.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace nbits::kernels::neon8 {

struct V8 {
  float32x4_t lo, hi;
};

inline V8 set8(float v) { return {vdupq_n_f32(v), vdupq_n_f32(v)}; }
inline V8 zero8() { return set8(0.0f); }
inline V8 ld8(const float* p) { return {vld1q_f32(p), vld1q_f32(p + 4)}; }
inline V8 ld8(const uint16_t* p) {
  return {vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))),
          vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p + 4)))};
}
inline void st8(float* p, V8 v) {
  vst1q_f32(p, v.lo);
  vst1q_f32(p + 4, v.hi);
}
// The first k (< 8 or more) elements, zero after (maskload); store only the first k (maskstore).
template <typename T>
inline V8 ld8_tail(const T* p, int64_t k) {
  if (k >= 8) return ld8(p);
  T t[8] = {};
  std::memcpy(t, p, static_cast<size_t>(std::min<int64_t>(k, 8)) * sizeof(T));
  return ld8(t);
}
inline void st8_tail(float* p, V8 v, int64_t k) {
  if (k >= 8) return st8(p, v);
  float t[8];
  st8(t, v);
  std::memcpy(p, t, static_cast<size_t>(std::min<int64_t>(k, 8)) * sizeof(float));
}
inline V8 add8(V8 a, V8 b) { return {vaddq_f32(a.lo, b.lo), vaddq_f32(a.hi, b.hi)}; }
inline V8 sub8(V8 a, V8 b) { return {vsubq_f32(a.lo, b.lo), vsubq_f32(a.hi, b.hi)}; }
inline V8 mul8(V8 a, V8 b) { return {vmulq_f32(a.lo, b.lo), vmulq_f32(a.hi, b.hi)}; }
inline V8 div8(V8 a, V8 b) { return {vdivq_f32(a.lo, b.lo), vdivq_f32(a.hi, b.hi)}; }
inline V8 fmadd8(V8 a, V8 b, V8 c) { return {vfmaq_f32(c.lo, a.lo, b.lo), vfmaq_f32(c.hi, a.hi, b.hi)}; }
// maxps: a > b ? a : b (b when either is NaN; b on equal, so -0/+0 order is kept).
inline float32x4_t maxps(float32x4_t a, float32x4_t b) { return vbslq_f32(vcgtq_f32(a, b), a, b); }
inline V8 max8(V8 a, V8 b) { return {maxps(a.lo, b.lo), maxps(a.hi, b.hi)}; }
// exp of 4 floats: kernels/x86/exp_avx2.h's exp8 (Cephes reduction, Estrin polynomial, 2^n as
// two factors) with the same fused operations.
inline float32x4_t exp4(float32x4_t x) {
  x = vmaxq_f32(vdupq_n_f32(-110.0f), vminq_f32(vdupq_n_f32(89.0f), x));  // NaN stays NaN
  const float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
  float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));
  r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
  const float32x4_t r2 = vmulq_f32(r, r);
  const float32x4_t a = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), vdupq_n_f32(1.6666665459e-1f), r);
  const float32x4_t b = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), vdupq_n_f32(8.3334519073e-3f), r);
  const float32x4_t c = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), vdupq_n_f32(1.9875691500e-4f), r);
  const float32x4_t p = vfmaq_f32(a, vfmaq_f32(b, c, r2), r2);
  const float32x4_t e = vaddq_f32(vfmaq_f32(r, p, r2), vdupq_n_f32(1.0f));
  const int32x4_t ni = vcvtnq_s32_f32(n);
  const int32x4_t n1 = vshrq_n_s32(ni, 1);
  const int32x4_t n2 = vsubq_s32(ni, n1);
  const int32x4_t bias = vdupq_n_s32(127);
  const float32x4_t s1 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n1, bias), 23));
  const float32x4_t s2 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n2, bias), 23));
  return vmulq_f32(vmulq_f32(e, s1), s2);
}
inline V8 exp8(V8 x) { return {exp4(x.lo), exp4(x.hi)}; }

// The basics of the V of the kernels written once over a vector type (the attention tile, the
// dequantize-once CompFp32 GEMM), which extend it: the AVX2 port's 8-float vector.
struct F32x8 {
  using R = V8;
  static constexpr int kLanes = 8;
  static R zero() { return zero8(); }
  static R set1(float x) { return set8(x); }
  static R load(const float* p) { return ld8(p); }
  static void store(float* p, R x) { st8(p, x); }
  static R fmadd(R a, R b, R c) { return fmadd8(a, b, c); }
  static R add(R a, R b) { return add8(a, b); }
  static R sub(R a, R b) { return sub8(a, b); }
  static R mul(R a, R b) { return mul8(a, b); }
  static R max(R a, R b) { return max8(a, b); }
  static R load_partial(const float* p, int n) { return ld8_tail(p, n); }
  static void store_partial(float* p, R x, int n) { st8_tail(p, x, n); }
};

}  // namespace nbits::kernels::neon8
