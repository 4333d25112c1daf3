// Scalar versions of the vector helpers and the one-time dispatch.
#include "kernels/vector_ops.h"

#include <algorithm>
#include <cmath>

#include "base/cpu_features.h"
#include "base/fp16.h"
#if defined(NBITS_ARCH_X86)
#include "kernels/x86/vector_ops_avx2.h"
#endif
#if defined(NBITS_ARCH_ARM64)
#include "kernels/arm64/vector_ops_neon.h"
#endif

namespace nbits::kernels {
namespace {

// Product rounded, then added (no fused multiply-add: clang would contract on FMA ISAs; GCC on
// baseline x86-64 has no FMA to contract into).
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif
float sequential_sum_squares(const float* x, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float p = x[i] * x[i];
    s += p;
  }
  return s;
}

float dot_scalar(const float* a, const float* b, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

void axpy_scalar(float alpha, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

void scale_mul_scalar(const float* x, const float* w, float s, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * s * w[i];
}

int64_t argmax_scalar(const float* x, int64_t n) {
  int64_t best = -1;
  for (int64_t i = 0; i < n; ++i)
    if (!std::isnan(x[i]) && (best < 0 || x[i] > x[best])) best = i;
  return best < 0 && n > 0 ? 0 : best;
}

float max_scalar(const float* x, int64_t n) {
  float mx = -INFINITY;
  for (int64_t i = 0; i < n; ++i) mx = std::fmax(mx, x[i]);
  return mx;
}

float exp_shift_sum_scalar(float* x, int64_t n, float shift) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += (x[i] = std::exp(x[i] - shift));
  return sum;
}

void scale_scalar(float* x, float s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

void exp_scalar(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
}

void sigmoid_scalar(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float e = std::exp(-std::fabs(x[i])), s = 1.0f / (1.0f + e);
    y[i] = x[i] < 0.0f ? e * s : s;
  }
}

void silu_mul_scalar(const float* x, const float* up, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float s;
    sigmoid_scalar(x + i, &s, 1);
    const float a = x[i] * s;
    y[i] = up ? a * up[i] : a;
  }
}

inline float widen(float v) { return v; }
inline float widen(uint16_t h) { return fp16_to_float(h); }

template <typename T>
void dot_rows_scalar(const float* x, int64_t nx, int64_t xs, const T* M, int64_t rows, int64_t n, float alpha,
                     float* y, int64_t ys) {
  for (int64_t g = 0; g < nx; ++g)
    for (int64_t j = 0; j < rows; ++j) {
      float s = 0.0f;
      for (int64_t i = 0; i < n; ++i) s += x[g * xs + i] * widen(M[j * n + i]);
      y[g * ys + j] = alpha * s;
    }
}

template <typename T>
void accumulate_rows_scalar(const float* p, int64_t np, int64_t ps, const T* M, int64_t rows, int64_t n,
                            float* y, int64_t ys) {
  for (int64_t g = 0; g < np; ++g)
    for (int64_t j = 0; j < rows; ++j)
      for (int64_t i = 0; i < n; ++i) y[g * ys + i] += p[g * ps + j] * widen(M[j * n + i]);
}

void sum_squares_rows_scalar(const float* x, int64_t rows, int64_t n, float* out) {
  for (int64_t r = 0; r < rows; ++r) out[r] = sequential_sum_squares(x + r * n, n);
}

template <VecOp Op>
inline float apply(float a, float b) {
  if constexpr (Op == VecOp::kAdd) return a + b;
  if constexpr (Op == VecOp::kSub) return a - b;
  if constexpr (Op == VecOp::kMul) return a * b;
  return a / b;
}

// Mode 0: a[i] op b[i]; 1: a[i] op b[0]; 2: a[0] op b[i].
template <VecOp Op>
void binary_op(int mode, const float* a, const float* b, float* y, int64_t n) {
  if (mode == 0) {
    for (int64_t i = 0; i < n; ++i) y[i] = apply<Op>(a[i], b[i]);
  } else if (mode == 1) {
    const float bv = n > 0 ? b[0] : 0.0f;
    for (int64_t i = 0; i < n; ++i) y[i] = apply<Op>(a[i], bv);
  } else {
    const float av = n > 0 ? a[0] : 0.0f;
    for (int64_t i = 0; i < n; ++i) y[i] = apply<Op>(av, b[i]);
  }
}

void binary_scalar(int op, int mode, const float* a, const float* b, float* y, int64_t n) {
  switch (static_cast<VecOp>(op)) {
    case VecOp::kAdd:
      return binary_op<VecOp::kAdd>(mode, a, b, y, n);
    case VecOp::kSub:
      return binary_op<VecOp::kSub>(mode, a, b, y, n);
    case VecOp::kMul:
      return binary_op<VecOp::kMul>(mode, a, b, y, n);
    case VecOp::kDiv:
      return binary_op<VecOp::kDiv>(mode, a, b, y, n);
  }
}

struct Ops {
  const char* isa;
  float (*dot)(const float*, const float*, int64_t);
  void (*axpy)(float, const float*, float*, int64_t);
  void (*scale_mul)(const float*, const float*, float, int64_t, float*);
  int64_t (*argmax)(const float*, int64_t);
  float (*max)(const float*, int64_t);
  float (*exp_shift_sum)(float*, int64_t, float);
  void (*scale)(float*, float, int64_t);
  void (*exp)(const float*, float*, int64_t);
  void (*sigmoid)(const float*, float*, int64_t);
  void (*dot_rows)(const float*, int64_t, int64_t, const float*, int64_t, int64_t, float, float*, int64_t);
  void (*accumulate_rows)(const float*, int64_t, int64_t, const float*, int64_t, int64_t, float*, int64_t);
  void (*binary)(int, int, const float*, const float*, float*, int64_t);
  void (*sum_squares_rows)(const float*, int64_t, int64_t, float*);
  void (*silu_mul)(const float*, const float*, float*, int64_t);
  void (*dot_rows_f16)(const float*, int64_t, int64_t, const uint16_t*, int64_t, int64_t, float, float*,
                       int64_t);
  void (*accumulate_rows_f16)(const float*, int64_t, int64_t, const uint16_t*, int64_t, int64_t, float*,
                              int64_t);
};

const Ops& ops() {
  static const Ops o = [] {
#if defined(NBITS_ARCH_X86)
    const CpuFeatures& f = cpu_features();
    if (f.avx2 && f.fma)
      return Ops{"avx2",
                 dot_avx2,
                 axpy_avx2,
                 scale_mul_avx2,
                 argmax_avx2,
                 max_avx2,
                 exp_shift_sum_avx2,
                 scale_avx2,
                 exp_avx2,
                 sigmoid_avx2,
                 dot_rows_avx2,
                 accumulate_rows_avx2,
                 binary_avx2,
                 sum_squares_rows_avx2,
                 silu_mul_avx2,
                 f.f16c ? dot_rows_f16_avx2 : dot_rows_scalar<uint16_t>,
                 f.f16c ? accumulate_rows_f16_avx2 : accumulate_rows_scalar<uint16_t>};
#endif
#if defined(NBITS_ARCH_ARM64)
    if (cpu_features().neon)  // the AVX2 helpers' lanes and operation order: the same bits as x86
      return Ops{"neon",
                 dot_neon,
                 axpy_neon,
                 scale_mul_neon,
                 argmax_neon,
                 max_neon,
                 exp_shift_sum_neon,
                 scale_neon,
                 exp_neon,
                 sigmoid_neon,
                 dot_rows_neon,
                 accumulate_rows_neon,
                 binary_neon,
                 sum_squares_rows_neon,
                 silu_mul_neon,
                 dot_rows_f16_neon,
                 accumulate_rows_f16_neon};
#endif
    return Ops{"scalar",
               dot_scalar,
               axpy_scalar,
               scale_mul_scalar,
               argmax_scalar,
               max_scalar,
               exp_shift_sum_scalar,
               scale_scalar,
               exp_scalar,
               sigmoid_scalar,
               dot_rows_scalar<float>,
               accumulate_rows_scalar<float>,
               binary_scalar,
               sum_squares_rows_scalar,
               silu_mul_scalar,
               dot_rows_scalar<uint16_t>,
               accumulate_rows_scalar<uint16_t>};
  }();
  return o;
}

}  // namespace

float vec_dot(const float* a, const float* b, int64_t n) { return ops().dot(a, b, n); }

void vec_axpy(float alpha, const float* x, float* y, int64_t n) { ops().axpy(alpha, x, y, n); }

void vec_rms_norm(const float* x, const float* weight, int64_t n, float eps, float* y) {
  if (n <= 0) return;
  const float ms = ops().dot(x, x, n) / static_cast<float>(n);
  ops().scale_mul(x, weight, 1.0f / std::sqrt(ms + eps), n, y);
}

void vec_softmax(float* x, int64_t n) {
  if (n <= 0) return;
  const float sum = ops().exp_shift_sum(x, n, ops().max(x, n));
  ops().scale(x, 1.0f / sum, n);
}

int64_t vec_argmax(const float* x, int64_t n) { return n <= 0 ? -1 : ops().argmax(x, n); }

float vec_max(const float* x, int64_t n) { return ops().max(x, n); }

float vec_exp_shift_sum(float* x, int64_t n, float shift) { return ops().exp_shift_sum(x, n, shift); }

void vec_scale(float* x, float s, int64_t n) { ops().scale(x, s, n); }

void vec_exp(const float* x, float* y, int64_t n) { ops().exp(x, y, n); }

void vec_sigmoid(const float* x, float* y, int64_t n) { ops().sigmoid(x, y, n); }

void vec_silu_mul(const float* x, const float* up, float* y, int64_t n) { ops().silu_mul(x, up, y, n); }

void vec_dot_rows(const float* x, int64_t nx, int64_t x_stride, const float* M, int64_t rows, int64_t n,
                  float alpha, float* y, int64_t y_stride) {
  ops().dot_rows(x, nx, x_stride, M, rows, n, alpha, y, y_stride);
}

void vec_accumulate_rows(const float* p, int64_t np, int64_t p_stride, const float* M, int64_t rows,
                         int64_t n, float* y, int64_t y_stride) {
  ops().accumulate_rows(p, np, p_stride, M, rows, n, y, y_stride);
}

void vec_dot_rows_f16(const float* x, int64_t nx, int64_t x_stride, const uint16_t* M, int64_t rows,
                      int64_t n, float alpha, float* y, int64_t y_stride) {
  ops().dot_rows_f16(x, nx, x_stride, M, rows, n, alpha, y, y_stride);
}

void vec_accumulate_rows_f16(const float* p, int64_t np, int64_t p_stride, const uint16_t* M, int64_t rows,
                             int64_t n, float* y, int64_t y_stride) {
  ops().accumulate_rows_f16(p, np, p_stride, M, rows, n, y, y_stride);
}

void vec_binary(VecOp op, const float* a, const float* b, float* y, int64_t n) {
  ops().binary(static_cast<int>(op), 0, a, b, y, n);
}

void vec_binary_scalar(VecOp op, const float* a, float b, bool b_first, float* y, int64_t n) {
  if (b_first) {
    ops().binary(static_cast<int>(op), 2, &b, a, y, n);
  } else {
    ops().binary(static_cast<int>(op), 1, a, &b, y, n);
  }
}

void vec_sum_squares_rows(const float* x, int64_t rows, int64_t n, float* out) {
  ops().sum_squares_rows(x, rows, n, out);
}

const char* vector_ops_isa() { return ops().isa; }

}  // namespace nbits::kernels
