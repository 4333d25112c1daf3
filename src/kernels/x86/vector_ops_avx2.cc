#include "kernels/x86/vector_ops_avx2.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/x86/exp_avx2.h"

namespace nbits::kernels {
namespace {

using x86::exp8;
using x86::sigmoid8;

// Lane mask for the first k (0..8) lanes.
inline __m256i tail_mask(int64_t k) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(k)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

inline float hsum(__m256 s) {
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  h = _mm_add_ss(h, _mm_shuffle_ps(h, h, 1));
  return _mm_cvtss_f32(h);
}

// Lane r of the result = horizontal sum of a[r].
// (unpack/shuffle + add: single-uop shuffles, cheaper than hadd on Zen.)
inline __m256 hsum8(const __m256* a) {
  __m256 p[4];
  for (int k = 0; k < 4; ++k)
    p[k] =
        _mm256_add_ps(_mm256_unpacklo_ps(a[2 * k], a[2 * k + 1]), _mm256_unpackhi_ps(a[2 * k], a[2 * k + 1]));
  const __m256 s0 = _mm256_add_ps(_mm256_shuffle_ps(p[0], p[1], 0x44), _mm256_shuffle_ps(p[0], p[1], 0xEE));
  const __m256 s1 = _mm256_add_ps(_mm256_shuffle_ps(p[2], p[3], 0x44), _mm256_shuffle_ps(p[2], p[3], 0xEE));
  return _mm256_add_ps(_mm256_permute2f128_ps(s0, s1, 0x20), _mm256_permute2f128_ps(s0, s1, 0x31));
}

// In place: c[k] lane j <- c[j] lane k (8x8 transpose).
inline void transpose8(__m256* c) {
  const __m256 t0 = _mm256_unpacklo_ps(c[0], c[1]), t1 = _mm256_unpackhi_ps(c[0], c[1]);
  const __m256 t2 = _mm256_unpacklo_ps(c[2], c[3]), t3 = _mm256_unpackhi_ps(c[2], c[3]);
  const __m256 t4 = _mm256_unpacklo_ps(c[4], c[5]), t5 = _mm256_unpackhi_ps(c[4], c[5]);
  const __m256 t6 = _mm256_unpacklo_ps(c[6], c[7]), t7 = _mm256_unpackhi_ps(c[6], c[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  c[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  c[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  c[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  c[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  c[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  c[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  c[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  c[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

// The empty asm hides v's origin, so the compiler cannot fuse the product into the next add
// (this file is built with -mfma): results stay bitwise equal to separate multiply and add.
template <typename T>
inline T no_contract(T v) {
  __asm__("" : "+x"(v));
  return v;
}

template <int Op>
inline __m256 apply(__m256 a, __m256 b) {
  if constexpr (Op == 0) return _mm256_add_ps(a, b);
  if constexpr (Op == 1) return _mm256_sub_ps(a, b);
  if constexpr (Op == 2) return _mm256_mul_ps(a, b);
  return _mm256_div_ps(a, b);
}

template <int Op>
inline float apply(float a, float b) {
  if constexpr (Op == 0) return a + b;
  if constexpr (Op == 1) return a - b;
  if constexpr (Op == 2) return a * b;
  return a / b;
}

// Mode 0: a[i] op b[i]; 1: a[i] op b[0]; 2: a[0] op b[i].
template <int Op, int Mode>
void binary(const float* a, const float* b, float* y, int64_t n) {
  const __m256 va = _mm256_set1_ps(Mode == 2 ? a[0] : 0.0f), vb = _mm256_set1_ps(Mode == 1 ? b[0] : 0.0f);
  auto la = [&](int64_t i) { return Mode == 2 ? va : _mm256_loadu_ps(a + i); };
  auto lb = [&](int64_t i) { return Mode == 1 ? vb : _mm256_loadu_ps(b + i); };
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256 r0 = apply<Op>(la(i), lb(i)), r1 = apply<Op>(la(i + 8), lb(i + 8));
    const __m256 r2 = apply<Op>(la(i + 16), lb(i + 16)), r3 = apply<Op>(la(i + 24), lb(i + 24));
    _mm256_storeu_ps(y + i, r0);
    _mm256_storeu_ps(y + i + 8, r1);
    _mm256_storeu_ps(y + i + 16, r2);
    _mm256_storeu_ps(y + i + 24, r3);
  }
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, apply<Op>(la(i), lb(i)));
  for (; i < n; ++i) y[i] = apply<Op>(Mode == 2 ? a[0] : a[i], Mode == 1 ? b[0] : b[i]);
}

template <int Op>
void binary_mode(int mode, const float* a, const float* b, float* y, int64_t n) {
  if (mode == 0) return binary<Op, 0>(a, b, y, n);
  if (mode == 1) return binary<Op, 1>(a, b, y, n);
  return binary<Op, 2>(a, b, y, n);
}

}  // namespace

float dot_avx2(const float* a, const float* b, int64_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
    s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
  }
  for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
  float r = hsum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
  for (; i < n; ++i) r += a[i] * b[i];
  return r;
}

void axpy_avx2(float alpha, const float* x, float* y, int64_t n) {
  const __m256 va = _mm256_set1_ps(alpha);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] += alpha * x[i];
}

void scale_mul_avx2(const float* x, const float* w, float s, int64_t n, float* y) {
  const __m256 vs = _mm256_set1_ps(s);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vs), _mm256_loadu_ps(w + i)));
  for (; i < n; ++i) y[i] = x[i] * s * w[i];
}

int64_t argmax_avx2(const float* x, int64_t n) {
  // Pass 1: the maximum (max_ps drops a NaN in its first operand). Pass 2: its first index.
  __m256 m0 = _mm256_set1_ps(-INFINITY), m1 = m0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    m0 = _mm256_max_ps(_mm256_loadu_ps(x + i), m0);
    m1 = _mm256_max_ps(_mm256_loadu_ps(x + i + 8), m1);
  }
  alignas(32) float t[8];
  _mm256_store_ps(t, _mm256_max_ps(m0, m1));
  float mx = -INFINITY;
  for (float v : t) mx = std::fmax(mx, v);
  for (; i < n; ++i) mx = std::fmax(mx, x[i]);
  const __m256 vm = _mm256_set1_ps(mx);
  for (i = 0; i + 8 <= n; i += 8) {
    const int mask = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), vm, _CMP_EQ_OQ));
    if (mask != 0) return i + __builtin_ctz(static_cast<unsigned>(mask));
  }
  for (; i < n; ++i)
    if (x[i] == mx) return i;
  return 0;  // every element NaN
}

float max_avx2(const float* x, int64_t n) {
  // max_ps(x, m) keeps m when x is NaN, so NaNs are skipped and no lane ever holds one.
  const __m256 ninf = _mm256_set1_ps(-INFINITY);
  __m256 m0 = ninf, m1 = m0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    m0 = _mm256_max_ps(_mm256_loadu_ps(x + i), m0);
    m1 = _mm256_max_ps(_mm256_loadu_ps(x + i + 8), m1);
  }
  for (; i < n; i += 8) {
    const __m256i m = tail_mask(n - i);
    m0 = _mm256_max_ps(_mm256_blendv_ps(ninf, _mm256_maskload_ps(x + i, m), _mm256_castsi256_ps(m)), m0);
  }
  __m256 v = _mm256_max_ps(m0, m1);
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  h = _mm_max_ss(h, _mm_shuffle_ps(h, h, 1));
  return _mm_cvtss_f32(h);
}

float exp_shift_sum_avx2(float* x, int64_t n, float shift) {
  const __m256 vs = _mm256_set1_ps(shift);
  __m256 s0 = _mm256_setzero_ps(), s1 = s0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 e0 = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vs));
    const __m256 e1 = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vs));
    _mm256_storeu_ps(x + i, e0);
    _mm256_storeu_ps(x + i + 8, e1);
    s0 = _mm256_add_ps(s0, e0);
    s1 = _mm256_add_ps(s1, e1);
  }
  for (; i < n; i += 8) {
    const __m256i m = tail_mask(n - i);
    const __m256 e = exp8(_mm256_sub_ps(_mm256_maskload_ps(x + i, m), vs));
    _mm256_maskstore_ps(x + i, m, e);
    s0 = _mm256_add_ps(s0, _mm256_and_ps(e, _mm256_castsi256_ps(m)));
  }
  return hsum(_mm256_add_ps(s0, s1));
}

void scale_avx2(float* x, float s, int64_t n) {
  const __m256 vs = _mm256_set1_ps(s);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vs));
  for (; i < n; ++i) x[i] *= s;
}

void exp_avx2(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, exp8(_mm256_loadu_ps(x + i)));
  if (i < n) {
    const __m256i m = tail_mask(n - i);
    _mm256_maskstore_ps(y + i, m, exp8(_mm256_maskload_ps(x + i, m)));
  }
}

void sigmoid_avx2(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, sigmoid8(_mm256_loadu_ps(x + i)));
  if (i < n) {
    const __m256i m = tail_mask(n - i);
    _mm256_maskstore_ps(y + i, m, sigmoid8(_mm256_maskload_ps(x + i, m)));
  }
}

void silu_mul_avx2(const float* x, const float* up, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256 a = _mm256_mul_ps(v, sigmoid8(v));
    _mm256_storeu_ps(y + i, up ? _mm256_mul_ps(a, _mm256_loadu_ps(up + i)) : a);
  }
  if (i < n) {
    const __m256i m = tail_mask(n - i);
    const __m256 v = _mm256_maskload_ps(x + i, m);
    const __m256 a = _mm256_mul_ps(v, sigmoid8(v));
    _mm256_maskstore_ps(y + i, m, up ? _mm256_mul_ps(a, _mm256_maskload_ps(up + i, m)) : a);
  }
}

namespace {

// One x: 8 rows at a time (8 accumulators), then single rows.
// Eight elements of a matrix row as floats: fp32 as is, IEEE fp16 widened (F16C).
inline __m256 ld(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 ld(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
// The first `count` (< 8) elements, zero after; `m` is tail_mask(count).
inline __m256 ld_tail(const float* p, int64_t /*count*/, __m256i m) { return _mm256_maskload_ps(p, m); }
inline __m256 ld_tail(const uint16_t* p, int64_t count, __m256i /*m*/) {
  alignas(16) uint16_t t[8] = {};
  std::memcpy(t, p, static_cast<size_t>(std::min<int64_t>(count, 8)) * sizeof(uint16_t));
  return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(t)));
}

template <typename T>
void dot_rows_1(const float* x, const T* M, int64_t rows, int64_t n, float alpha, float* y) {
  const int64_t full = n / 8 * 8;
  const __m256i m = tail_mask(n - full);
  const __m256 va = _mm256_set1_ps(alpha);
  int64_t j = 0;
  for (; j + 8 <= rows; j += 8) {
    const T* r = M + j * n;
    __m256 acc[8];
    for (int k = 0; k < 8; ++k) acc[k] = _mm256_setzero_ps();
    for (int64_t i = 0; i < full; i += 8) {
      const __m256 xv = _mm256_loadu_ps(x + i);
      for (int k = 0; k < 8; ++k) acc[k] = _mm256_fmadd_ps(xv, ld(r + k * n + i), acc[k]);
    }
    if (full < n) {
      const __m256 xv = _mm256_maskload_ps(x + full, m);
      for (int k = 0; k < 8; ++k)
        acc[k] = _mm256_fmadd_ps(xv, ld_tail(r + k * n + full, n - full, m), acc[k]);
    }
    _mm256_storeu_ps(y + j, _mm256_mul_ps(va, hsum8(acc)));
  }
  for (; j < rows; ++j) {
    const T* r = M + j * n;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0;
    int64_t i = 0;
    for (; i + 16 <= full; i += 16) {
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), ld(r + i), a0);
      a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), ld(r + i + 8), a1);
    }
    for (; i < full; i += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), ld(r + i), a0);
    if (full < n) a1 = _mm256_fmadd_ps(_mm256_maskload_ps(x + full, m), ld_tail(r + full, n - full, m), a1);
    y[j] = alpha * hsum(_mm256_add_ps(a0, a1));
  }
}

// Two x sharing each row load: 4 rows x 2 vectors = 8 accumulators.
template <typename T>
void dot_rows_2(const float* x0, const float* x1, const T* M, int64_t rows, int64_t n, float alpha, float* y0,
                float* y1) {
  const int64_t full = n / 8 * 8;
  const __m256i m = tail_mask(n - full);
  const __m256 va = _mm256_set1_ps(alpha);
  int64_t j = 0;
  for (; j + 4 <= rows; j += 4) {
    const T* r = M + j * n;
    __m256 acc[8];
    for (int k = 0; k < 8; ++k) acc[k] = _mm256_setzero_ps();
    for (int64_t i = 0; i < full; i += 8) {
      const __m256 u = _mm256_loadu_ps(x0 + i), v = _mm256_loadu_ps(x1 + i);
      for (int k = 0; k < 4; ++k) {
        const __m256 row = ld(r + k * n + i);
        acc[k] = _mm256_fmadd_ps(u, row, acc[k]);
        acc[4 + k] = _mm256_fmadd_ps(v, row, acc[4 + k]);
      }
    }
    if (full < n) {
      const __m256 u = _mm256_maskload_ps(x0 + full, m), v = _mm256_maskload_ps(x1 + full, m);
      for (int k = 0; k < 4; ++k) {
        const __m256 row = ld_tail(r + k * n + full, n - full, m);
        acc[k] = _mm256_fmadd_ps(u, row, acc[k]);
        acc[4 + k] = _mm256_fmadd_ps(v, row, acc[4 + k]);
      }
    }
    const __m256 s = _mm256_mul_ps(va, hsum8(acc));  // lanes 0-3: x0 . rows, 4-7: x1 . rows
    _mm_storeu_ps(y0 + j, _mm256_castps256_ps128(s));
    _mm_storeu_ps(y1 + j, _mm256_extractf128_ps(s, 1));
  }
  if (j < rows) {
    dot_rows_1(x0, M + j * n, rows - j, n, alpha, y0 + j);
    dot_rows_1(x1, M + j * n, rows - j, n, alpha, y1 + j);
  }
}

// One p: 64 columns at a time (8 accumulators), then 8 with even/odd rows in separate chains.
template <typename T>
void accumulate_rows_1(const float* p, const T* M, int64_t rows, int64_t n, float* y) {
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    __m256 acc[8];
    for (int k = 0; k < 8; ++k) acc[k] = _mm256_loadu_ps(y + i + 8 * k);
    for (int64_t j = 0; j < rows; ++j) {
      const __m256 pj = _mm256_broadcast_ss(p + j);
      const T* r = M + j * n + i;
      for (int k = 0; k < 8; ++k) acc[k] = _mm256_fmadd_ps(pj, ld(r + 8 * k), acc[k]);
    }
    for (int k = 0; k < 8; ++k) _mm256_storeu_ps(y + i + 8 * k, acc[k]);
  }
  for (; i < n; i += 8) {
    const __m256i m = tail_mask(n - i);
    __m256 a0 = _mm256_maskload_ps(y + i, m), a1 = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 2 <= rows; j += 2) {
      a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(p + j), ld_tail(M + j * n + i, n - i, m), a0);
      a1 = _mm256_fmadd_ps(_mm256_broadcast_ss(p + j + 1), ld_tail(M + (j + 1) * n + i, n - i, m), a1);
    }
    if (j < rows) a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(p + j), ld_tail(M + j * n + i, n - i, m), a0);
    _mm256_maskstore_ps(y + i, m, _mm256_add_ps(a0, a1));
  }
}

// Two p sharing each row load: 32 columns x 2 outputs = 8 accumulators, then 8 columns.
template <typename T>
void accumulate_rows_2(const float* p0, const float* p1, const T* M, int64_t rows, int64_t n, float* y0,
                       float* y1) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256 acc[8];
    for (int k = 0; k < 4; ++k) {
      acc[k] = _mm256_loadu_ps(y0 + i + 8 * k);
      acc[4 + k] = _mm256_loadu_ps(y1 + i + 8 * k);
    }
    for (int64_t j = 0; j < rows; ++j) {
      const __m256 a = _mm256_broadcast_ss(p0 + j), b = _mm256_broadcast_ss(p1 + j);
      const T* r = M + j * n + i;
      for (int k = 0; k < 4; ++k) {
        const __m256 row = ld(r + 8 * k);
        acc[k] = _mm256_fmadd_ps(a, row, acc[k]);
        acc[4 + k] = _mm256_fmadd_ps(b, row, acc[4 + k]);
      }
    }
    for (int k = 0; k < 4; ++k) {
      _mm256_storeu_ps(y0 + i + 8 * k, acc[k]);
      _mm256_storeu_ps(y1 + i + 8 * k, acc[4 + k]);
    }
  }
  for (; i < n; i += 8) {
    const __m256i m = tail_mask(n - i);
    __m256 a0 = _mm256_maskload_ps(y0 + i, m), b0 = _mm256_maskload_ps(y1 + i, m);
    __m256 a1 = _mm256_setzero_ps(), b1 = a1;
    int64_t j = 0;
    for (; j + 2 <= rows; j += 2) {
      const __m256 r0 = ld_tail(M + j * n + i, n - i, m), r1 = ld_tail(M + (j + 1) * n + i, n - i, m);
      a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(p0 + j), r0, a0);
      b0 = _mm256_fmadd_ps(_mm256_broadcast_ss(p1 + j), r0, b0);
      a1 = _mm256_fmadd_ps(_mm256_broadcast_ss(p0 + j + 1), r1, a1);
      b1 = _mm256_fmadd_ps(_mm256_broadcast_ss(p1 + j + 1), r1, b1);
    }
    if (j < rows) {
      const __m256 r0 = ld_tail(M + j * n + i, n - i, m);
      a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(p0 + j), r0, a0);
      b0 = _mm256_fmadd_ps(_mm256_broadcast_ss(p1 + j), r0, b0);
    }
    _mm256_maskstore_ps(y0 + i, m, _mm256_add_ps(a0, a1));
    _mm256_maskstore_ps(y1 + i, m, _mm256_add_ps(b0, b1));
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

void dot_rows_avx2(const float* x, int64_t nx, int64_t xs, const float* M, int64_t rows, int64_t n,
                   float alpha, float* y, int64_t ys) {
  dot_rows_any(x, nx, xs, M, rows, n, alpha, y, ys);
}
void dot_rows_f16_avx2(const float* x, int64_t nx, int64_t xs, const uint16_t* M, int64_t rows, int64_t n,
                       float alpha, float* y, int64_t ys) {
  dot_rows_any(x, nx, xs, M, rows, n, alpha, y, ys);
}
void accumulate_rows_avx2(const float* p, int64_t np, int64_t ps, const float* M, int64_t rows, int64_t n,
                          float* y, int64_t ys) {
  accumulate_rows_any(p, np, ps, M, rows, n, y, ys);
}
void accumulate_rows_f16_avx2(const float* p, int64_t np, int64_t ps, const uint16_t* M, int64_t rows,
                              int64_t n, float* y, int64_t ys) {
  accumulate_rows_any(p, np, ps, M, rows, n, y, ys);
}

void sum_squares_rows_avx2(const float* x, int64_t rows, int64_t n, float* out) {
  int64_t r = 0;
  for (; r + 8 <= rows; r += 8) {  // lane k accumulates row r + k, columns in order
    const float* b = x + r * n;
    __m256 acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      __m256 c[8];
      for (int k = 0; k < 8; ++k) c[k] = _mm256_loadu_ps(b + k * n + i);
      transpose8(c);
      for (int k = 0; k < 8; ++k) acc = _mm256_add_ps(acc, no_contract(_mm256_mul_ps(c[k], c[k])));
    }
    alignas(32) float t[8];
    _mm256_store_ps(t, acc);
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

void binary_avx2(int op, int mode, const float* a, const float* b, float* y, int64_t n) {
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
