// NEON vector helpers (baseline ARMv8-A), a lane-for-lane port of kernels/x86/vector_ops_avx2.cc:
// V8 is one AVX2 register as two float32x4; sums, FMAs, horizontal trees, max semantics
// (a > b ? a : b, as maxps) and masked tails follow the AVX2 code, so results equal its bits.
#include "kernels/arm64/vector_ops_neon.h"

#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/arm64/v8_neon_inl.h"

namespace nbits::kernels {
namespace {

using namespace neon8;

// Lanes [0, k) all ones.
inline V8 and_first(V8 v, int64_t k) {
  const int32x4_t idx = {0, 1, 2, 3};
  const int32x4_t kk = vdupq_n_s32(static_cast<int32_t>(std::min<int64_t>(k, 8)));
  const uint32x4_t m0 = vcltq_s32(idx, kk), m1 = vcltq_s32(vaddq_s32(idx, vdupq_n_s32(4)), kk);
  return {vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(v.lo), m0)),
          vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(v.hi), m1))};
}

template <typename T>
inline T no_contract(T v) {
  __asm__("" : "+w"(v));
  return v;
}

// hsum of the AVX2 code: (lo + hi), then (h0 + h2) + (h1 + h3).
inline float hsum(V8 s) {
  const float32x4_t h = vaddq_f32(s.lo, s.hi);
  const float32x2_t t = vadd_f32(vget_low_f32(h), vget_high_f32(h));
  return vget_lane_f32(t, 0) + vget_lane_f32(t, 1);
}

// 256-bit unpack / shuffle / permute, per 128-bit half as AVX2 does them.
inline V8 unpacklo(V8 a, V8 b) { return {vzip1q_f32(a.lo, b.lo), vzip1q_f32(a.hi, b.hi)}; }
inline V8 unpackhi(V8 a, V8 b) { return {vzip2q_f32(a.lo, b.lo), vzip2q_f32(a.hi, b.hi)}; }
inline float32x4_t sh44(float32x4_t p, float32x4_t q) {  // [p0 p1 q0 q1]
  return vreinterpretq_f32_f64(vzip1q_f64(vreinterpretq_f64_f32(p), vreinterpretq_f64_f32(q)));
}
inline float32x4_t shEE(float32x4_t p, float32x4_t q) {  // [p2 p3 q2 q3]
  return vreinterpretq_f32_f64(vzip2q_f64(vreinterpretq_f64_f32(p), vreinterpretq_f64_f32(q)));
}
inline V8 shuffle44(V8 a, V8 b) { return {sh44(a.lo, b.lo), sh44(a.hi, b.hi)}; }
inline V8 shuffleEE(V8 a, V8 b) { return {shEE(a.lo, b.lo), shEE(a.hi, b.hi)}; }

// Lane r of the result = horizontal sum of a[r] (the AVX2 tree).
inline V8 hsum8(const V8* a) {
  V8 p[4];
  for (int k = 0; k < 4; ++k) p[k] = add8(unpacklo(a[2 * k], a[2 * k + 1]), unpackhi(a[2 * k], a[2 * k + 1]));
  const V8 s0 = add8(shuffle44(p[0], p[1]), shuffleEE(p[0], p[1]));
  const V8 s1 = add8(shuffle44(p[2], p[3]), shuffleEE(p[2], p[3]));
  return {vaddq_f32(s0.lo, s0.hi), vaddq_f32(s1.lo, s1.hi)};
}

// In place: c[k] lane j <- c[j] lane k (8x8 transpose).
inline void transpose8(V8* c) {
  const V8 t0 = unpacklo(c[0], c[1]), t1 = unpackhi(c[0], c[1]);
  const V8 t2 = unpacklo(c[2], c[3]), t3 = unpackhi(c[2], c[3]);
  const V8 t4 = unpacklo(c[4], c[5]), t5 = unpackhi(c[4], c[5]);
  const V8 t6 = unpacklo(c[6], c[7]), t7 = unpackhi(c[6], c[7]);
  const V8 u0 = shuffle44(t0, t2), u1 = shuffleEE(t0, t2);
  const V8 u2 = shuffle44(t1, t3), u3 = shuffleEE(t1, t3);
  const V8 u4 = shuffle44(t4, t6), u5 = shuffleEE(t4, t6);
  const V8 u6 = shuffle44(t5, t7), u7 = shuffleEE(t5, t7);
  c[0] = {u0.lo, u4.lo};
  c[1] = {u1.lo, u5.lo};
  c[2] = {u2.lo, u6.lo};
  c[3] = {u3.lo, u7.lo};
  c[4] = {u0.hi, u4.hi};
  c[5] = {u1.hi, u5.hi};
  c[6] = {u2.hi, u6.hi};
  c[7] = {u3.hi, u7.hi};
}

// e / (1 + e) for x < 0, 1 / (1 + e) otherwise, e = exp(-|x|) (the sign bit picks, as blendv).
inline float32x4_t sigmoid4(float32x4_t x) {
  const float32x4_t e =
      exp4(vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(x), vdupq_n_u32(0x80000000u))));
  const float32x4_t s = vdivq_f32(vdupq_n_f32(1.0f), vaddq_f32(vdupq_n_f32(1.0f), e));
  const uint32x4_t neg = vreinterpretq_u32_s32(vshrq_n_s32(vreinterpretq_s32_f32(x), 31));
  return vbslq_f32(neg, vmulq_f32(e, s), s);
}
inline V8 sigmoid8(V8 x) { return {sigmoid4(x.lo), sigmoid4(x.hi)}; }

template <int Op>
inline V8 apply(V8 a, V8 b) {
  if constexpr (Op == 0) return add8(a, b);
  if constexpr (Op == 1) return sub8(a, b);
  if constexpr (Op == 2) return mul8(a, b);
  return div8(a, b);
}

template <int Op>
inline float apply(float a, float b) {
  if constexpr (Op == 0) return a + b;
  if constexpr (Op == 1) return a - b;
  if constexpr (Op == 2) return a * b;
  return a / b;
}

template <int Op, int Mode>
void binary(const float* a, const float* b, float* y, int64_t n) {
  const V8 va = set8(Mode == 2 ? a[0] : 0.0f), vb = set8(Mode == 1 ? b[0] : 0.0f);
  auto la = [&](int64_t i) { return Mode == 2 ? va : ld8(a + i); };
  auto lb = [&](int64_t i) { return Mode == 1 ? vb : ld8(b + i); };
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const V8 r0 = apply<Op>(la(i), lb(i)), r1 = apply<Op>(la(i + 8), lb(i + 8));
    const V8 r2 = apply<Op>(la(i + 16), lb(i + 16)), r3 = apply<Op>(la(i + 24), lb(i + 24));
    st8(y + i, r0);
    st8(y + i + 8, r1);
    st8(y + i + 16, r2);
    st8(y + i + 24, r3);
  }
  for (; i + 8 <= n; i += 8) st8(y + i, apply<Op>(la(i), lb(i)));
  for (; i < n; ++i) y[i] = apply<Op>(Mode == 2 ? a[0] : a[i], Mode == 1 ? b[0] : b[i]);
}

template <int Op>
void binary_mode(int mode, const float* a, const float* b, float* y, int64_t n) {
  if (mode == 0) return binary<Op, 0>(a, b, y, n);
  if (mode == 1) return binary<Op, 1>(a, b, y, n);
  return binary<Op, 2>(a, b, y, n);
}

}  // namespace

// The scalar tails of dot / axpy are fused multiply-adds where GCC contracts them in the AVX2 file.
float dot_neon(const float* a, const float* b, int64_t n) {
  V8 s0 = zero8(), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = fmadd8(ld8(a + i), ld8(b + i), s0);
    s1 = fmadd8(ld8(a + i + 8), ld8(b + i + 8), s1);
    s2 = fmadd8(ld8(a + i + 16), ld8(b + i + 16), s2);
    s3 = fmadd8(ld8(a + i + 24), ld8(b + i + 24), s3);
  }
  for (; i + 8 <= n; i += 8) s0 = fmadd8(ld8(a + i), ld8(b + i), s0);
  float r = hsum(add8(add8(s0, s1), add8(s2, s3)));
  // The x86 build's tail (GCC 12 -O2 -mfma): 4 products rounded (vmulps) and added in order when
  // 4 or more remain, then fused multiply-adds.
  if (n - i >= 4) {
    float p[4];
    vst1q_f32(p, vmulq_f32(vld1q_f32(a + i), vld1q_f32(b + i)));
    for (float v : p) r += v;
    i += 4;
  }
  for (; i < n; ++i) r = std::fma(a[i], b[i], r);
  return r;
}

void axpy_neon(float alpha, const float* x, float* y, int64_t n) {
  const V8 va = set8(alpha);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) st8(y + i, fmadd8(va, ld8(x + i), ld8(y + i)));
  for (; i < n; ++i) y[i] = std::fma(alpha, x[i], y[i]);
}

void scale_mul_neon(const float* x, const float* w, float s, int64_t n, float* y) {
  const V8 vs = set8(s);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) st8(y + i, mul8(mul8(ld8(x + i), vs), ld8(w + i)));
  for (; i < n; ++i) y[i] = no_contract(x[i] * s) * w[i];
}

int64_t argmax_neon(const float* x, int64_t n) {
  V8 m0 = set8(-INFINITY), m1 = m0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    m0 = max8(ld8(x + i), m0);
    m1 = max8(ld8(x + i + 8), m1);
  }
  float t[8];
  st8(t, max8(m0, m1));
  float mx = -INFINITY;
  for (float v : t) mx = std::fmax(mx, v);
  for (; i < n; ++i) mx = std::fmax(mx, x[i]);
  const float32x4_t vm = vdupq_n_f32(mx);
  for (i = 0; i + 8 <= n; i += 8) {
    const uint32x4_t e0 = vceqq_f32(vld1q_f32(x + i), vm), e1 = vceqq_f32(vld1q_f32(x + i + 4), vm);
    if (vmaxvq_u32(vorrq_u32(e0, e1)) != 0)
      for (int k = 0; k < 8; ++k)
        if (x[i + k] == mx) return i + k;
  }
  for (; i < n; ++i)
    if (x[i] == mx) return i;
  return 0;  // every element NaN
}

float max_neon(const float* x, int64_t n) {
  const V8 ninf = set8(-INFINITY);
  V8 m0 = ninf, m1 = m0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    m0 = max8(ld8(x + i), m0);
    m1 = max8(ld8(x + i + 8), m1);
  }
  for (; i < n; i += 8) {
    float t[8];
    for (int k = 0; k < 8; ++k) t[k] = i + k < n ? x[i + k] : -INFINITY;
    m0 = max8(ld8(t), m0);
  }
  const V8 v = max8(m0, m1);
  float32x4_t h = maxps(v.lo, v.hi);
  h = maxps(h, vcombine_f32(vget_high_f32(h), vget_high_f32(h)));  // movehl
  const float a = vgetq_lane_f32(h, 0), b = vgetq_lane_f32(h, 1);
  return a > b ? a : b;  // max_ss
}

float exp_shift_sum_neon(float* x, int64_t n, float shift) {
  const V8 vs = set8(shift);
  V8 s0 = zero8(), s1 = s0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const V8 e0 = exp8(sub8(ld8(x + i), vs));
    const V8 e1 = exp8(sub8(ld8(x + i + 8), vs));
    st8(x + i, e0);
    st8(x + i + 8, e1);
    s0 = add8(s0, e0);
    s1 = add8(s1, e1);
  }
  for (; i < n; i += 8) {
    const V8 e = exp8(sub8(ld8_tail(x + i, n - i), vs));
    st8_tail(x + i, e, n - i);
    s0 = add8(s0, and_first(e, n - i));
  }
  return hsum(add8(s0, s1));
}

void scale_neon(float* x, float s, int64_t n) {
  const V8 vs = set8(s);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) st8(x + i, mul8(ld8(x + i), vs));
  for (; i < n; ++i) x[i] *= s;
}

void exp_neon(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) st8(y + i, exp8(ld8(x + i)));
  if (i < n) st8_tail(y + i, exp8(ld8_tail(x + i, n - i)), n - i);
}

void sigmoid_neon(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) st8(y + i, sigmoid8(ld8(x + i)));
  if (i < n) st8_tail(y + i, sigmoid8(ld8_tail(x + i, n - i)), n - i);
}

void silu_mul_neon(const float* x, const float* up, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const V8 v = ld8(x + i);
    const V8 a = mul8(v, sigmoid8(v));
    st8(y + i, up ? mul8(a, ld8(up + i)) : a);
  }
  if (i < n) {
    const V8 v = ld8_tail(x + i, n - i);
    const V8 a = mul8(v, sigmoid8(v));
    st8_tail(y + i, up ? mul8(a, ld8_tail(up + i, n - i)) : a, n - i);
  }
}

namespace {

template <typename T>
void dot_rows_1(const float* x, const T* M, int64_t rows, int64_t n, float alpha, float* y) {
  const int64_t full = n / 8 * 8;
  const V8 va = set8(alpha);
  int64_t j = 0;
  for (; j + 8 <= rows; j += 8) {
    const T* r = M + j * n;
    V8 acc[8];
    for (int k = 0; k < 8; ++k) acc[k] = zero8();
    for (int64_t i = 0; i < full; i += 8) {
      const V8 xv = ld8(x + i);
      for (int k = 0; k < 8; ++k) acc[k] = fmadd8(xv, ld8(r + k * n + i), acc[k]);
    }
    if (full < n) {
      const V8 xv = ld8_tail(x + full, n - full);
      for (int k = 0; k < 8; ++k) acc[k] = fmadd8(xv, ld8_tail(r + k * n + full, n - full), acc[k]);
    }
    st8(y + j, mul8(va, hsum8(acc)));
  }
  for (; j < rows; ++j) {
    const T* r = M + j * n;
    V8 a0 = zero8(), a1 = a0;
    int64_t i = 0;
    for (; i + 16 <= full; i += 16) {
      a0 = fmadd8(ld8(x + i), ld8(r + i), a0);
      a1 = fmadd8(ld8(x + i + 8), ld8(r + i + 8), a1);
    }
    for (; i < full; i += 8) a0 = fmadd8(ld8(x + i), ld8(r + i), a0);
    if (full < n) a1 = fmadd8(ld8_tail(x + full, n - full), ld8_tail(r + full, n - full), a1);
    y[j] = alpha * hsum(add8(a0, a1));
  }
}

template <typename T>
void dot_rows_2(const float* x0, const float* x1, const T* M, int64_t rows, int64_t n, float alpha, float* y0,
                float* y1) {
  const int64_t full = n / 8 * 8;
  const V8 va = set8(alpha);
  int64_t j = 0;
  for (; j + 4 <= rows; j += 4) {
    const T* r = M + j * n;
    V8 acc[8];
    for (int k = 0; k < 8; ++k) acc[k] = zero8();
    for (int64_t i = 0; i < full; i += 8) {
      const V8 u = ld8(x0 + i), v = ld8(x1 + i);
      for (int k = 0; k < 4; ++k) {
        const V8 row = ld8(r + k * n + i);
        acc[k] = fmadd8(u, row, acc[k]);
        acc[4 + k] = fmadd8(v, row, acc[4 + k]);
      }
    }
    if (full < n) {
      const V8 u = ld8_tail(x0 + full, n - full), v = ld8_tail(x1 + full, n - full);
      for (int k = 0; k < 4; ++k) {
        const V8 row = ld8_tail(r + k * n + full, n - full);
        acc[k] = fmadd8(u, row, acc[k]);
        acc[4 + k] = fmadd8(v, row, acc[4 + k]);
      }
    }
    const V8 s = mul8(va, hsum8(acc));  // lanes 0-3: x0 . rows, 4-7: x1 . rows
    vst1q_f32(y0 + j, s.lo);
    vst1q_f32(y1 + j, s.hi);
  }
  if (j < rows) {
    dot_rows_1(x0, M + j * n, rows - j, n, alpha, y0 + j);
    dot_rows_1(x1, M + j * n, rows - j, n, alpha, y1 + j);
  }
}

template <typename T>
void accumulate_rows_1(const float* p, const T* M, int64_t rows, int64_t n, float* y) {
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    V8 acc[8];
    for (int k = 0; k < 8; ++k) acc[k] = ld8(y + i + 8 * k);
    for (int64_t j = 0; j < rows; ++j) {
      const V8 pj = set8(p[j]);
      const T* r = M + j * n + i;
      for (int k = 0; k < 8; ++k) acc[k] = fmadd8(pj, ld8(r + 8 * k), acc[k]);
    }
    for (int k = 0; k < 8; ++k) st8(y + i + 8 * k, acc[k]);
  }
  for (; i < n; i += 8) {
    const int64_t c = n - i;
    V8 a0 = ld8_tail(y + i, c), a1 = zero8();
    int64_t j = 0;
    for (; j + 2 <= rows; j += 2) {
      a0 = fmadd8(set8(p[j]), ld8_tail(M + j * n + i, c), a0);
      a1 = fmadd8(set8(p[j + 1]), ld8_tail(M + (j + 1) * n + i, c), a1);
    }
    if (j < rows) a0 = fmadd8(set8(p[j]), ld8_tail(M + j * n + i, c), a0);
    st8_tail(y + i, add8(a0, a1), c);
  }
}

template <typename T>
void accumulate_rows_2(const float* p0, const float* p1, const T* M, int64_t rows, int64_t n, float* y0,
                       float* y1) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    V8 acc[8];
    for (int k = 0; k < 4; ++k) {
      acc[k] = ld8(y0 + i + 8 * k);
      acc[4 + k] = ld8(y1 + i + 8 * k);
    }
    for (int64_t j = 0; j < rows; ++j) {
      const V8 a = set8(p0[j]), b = set8(p1[j]);
      const T* r = M + j * n + i;
      for (int k = 0; k < 4; ++k) {
        const V8 row = ld8(r + 8 * k);
        acc[k] = fmadd8(a, row, acc[k]);
        acc[4 + k] = fmadd8(b, row, acc[4 + k]);
      }
    }
    for (int k = 0; k < 4; ++k) {
      st8(y0 + i + 8 * k, acc[k]);
      st8(y1 + i + 8 * k, acc[4 + k]);
    }
  }
  for (; i < n; i += 8) {
    const int64_t c = n - i;
    V8 a0 = ld8_tail(y0 + i, c), b0 = ld8_tail(y1 + i, c);
    V8 a1 = zero8(), b1 = a1;
    int64_t j = 0;
    for (; j + 2 <= rows; j += 2) {
      const V8 r0 = ld8_tail(M + j * n + i, c), r1 = ld8_tail(M + (j + 1) * n + i, c);
      a0 = fmadd8(set8(p0[j]), r0, a0);
      b0 = fmadd8(set8(p1[j]), r0, b0);
      a1 = fmadd8(set8(p0[j + 1]), r1, a1);
      b1 = fmadd8(set8(p1[j + 1]), r1, b1);
    }
    if (j < rows) {
      const V8 r0 = ld8_tail(M + j * n + i, c);
      a0 = fmadd8(set8(p0[j]), r0, a0);
      b0 = fmadd8(set8(p1[j]), r0, b0);
    }
    st8_tail(y0 + i, add8(a0, a1), c);
    st8_tail(y1 + i, add8(b0, b1), c);
  }
}

template <typename T>
void dot_rows_any(const float* x, int64_t nx, int64_t xs, const T* M, int64_t rows, int64_t n, float alpha,
                  float* y, int64_t ys) {
  int64_t g = 0;
  for (; g + 2 <= nx; g += 2)
    dot_rows_2(x + g * xs, x + (g + 1) * xs, M, rows, n, alpha, y + g * ys, y + (g + 1) * ys);
  if (g < nx) dot_rows_1(x + g * xs, M, rows, n, alpha, y + g * ys);
}

template <typename T>
void accumulate_rows_any(const float* p, int64_t np, int64_t ps, const T* M, int64_t rows, int64_t n,
                         float* y, int64_t ys) {
  int64_t g = 0;
  for (; g + 2 <= np; g += 2)
    accumulate_rows_2(p + g * ps, p + (g + 1) * ps, M, rows, n, y + g * ys, y + (g + 1) * ys);
  if (g < np) accumulate_rows_1(p + g * ps, M, rows, n, y + g * ys);
}

}  // namespace

void dot_rows_neon(const float* x, int64_t nx, int64_t xs, const float* M, int64_t rows, int64_t n,
                   float alpha, float* y, int64_t ys) {
  dot_rows_any(x, nx, xs, M, rows, n, alpha, y, ys);
}
void dot_rows_f16_neon(const float* x, int64_t nx, int64_t xs, const uint16_t* M, int64_t rows, int64_t n,
                       float alpha, float* y, int64_t ys) {
  dot_rows_any(x, nx, xs, M, rows, n, alpha, y, ys);
}
void accumulate_rows_neon(const float* p, int64_t np, int64_t ps, const float* M, int64_t rows, int64_t n,
                          float* y, int64_t ys) {
  accumulate_rows_any(p, np, ps, M, rows, n, y, ys);
}
void accumulate_rows_f16_neon(const float* p, int64_t np, int64_t ps, const uint16_t* M, int64_t rows,
                              int64_t n, float* y, int64_t ys) {
  accumulate_rows_any(p, np, ps, M, rows, n, y, ys);
}

void sum_squares_rows_neon(const float* x, int64_t rows, int64_t n, float* out) {
  int64_t r = 0;
  for (; r + 8 <= rows; r += 8) {  // lane k accumulates row r + k, columns in order
    const float* b = x + r * n;
    V8 acc = zero8();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      V8 c[8];
      for (int k = 0; k < 8; ++k) c[k] = ld8(b + k * n + i);
      transpose8(c);
      for (int k = 0; k < 8; ++k) {
        const V8 sq = mul8(c[k], c[k]);
        acc = add8(acc, {no_contract(sq.lo), no_contract(sq.hi)});
      }
    }
    float t[8];
    st8(t, acc);
    for (int k = 0; k < 8; ++k) {
      float s = t[k];
      for (int64_t j = i; j < n; ++j) s += no_contract(b[k * n + j] * b[k * n + j]);
      out[r + k] = s;
    }
  }
  for (; r < rows; ++r) {
    float s = 0.0f;
    for (int64_t j = 0; j < n; ++j) s += no_contract(x[r * n + j] * x[r * n + j]);
    out[r] = s;
  }
}

void binary_neon(int op, int mode, const float* a, const float* b, float* y, int64_t n) {
  switch (op) {
    case 0:
      return binary_mode<0>(mode, a, b, y, n);
    case 1:
      return binary_mode<1>(mode, a, b, y, n);
    case 2:
      return binary_mode<2>(mode, a, b, y, n);
    default:
      return binary_mode<3>(mode, a, b, y, n);
  }
}

}  // namespace nbits::kernels
