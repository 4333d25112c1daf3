// Scalar versions of the vector helpers and the one-time dispatch.
#include "kernels/vector_ops.h"

#include <algorithm>
#include <cmath>

#include "base/cpu_features.h"
#if defined(NBITS_ARCH_X86)
#include "kernels/x86/vector_ops_avx2.h"
#endif

namespace nbits::kernels {
namespace {

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

struct Ops {
  const char* isa;
  float (*dot)(const float*, const float*, int64_t);
  void (*axpy)(float, const float*, float*, int64_t);
  void (*scale_mul)(const float*, const float*, float, int64_t, float*);
  int64_t (*argmax)(const float*, int64_t);
};

const Ops& ops() {
  static const Ops o = [] {
#if defined(NBITS_ARCH_X86)
    const CpuFeatures& f = cpu_features();
    if (f.avx2 && f.fma) return Ops{"avx2", dot_avx2, axpy_avx2, scale_mul_avx2, argmax_avx2};
#endif
    return Ops{"scalar", dot_scalar, axpy_scalar, scale_mul_scalar, argmax_scalar};
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
  float mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = std::max(mx, x[i]);
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

int64_t vec_argmax(const float* x, int64_t n) { return n <= 0 ? -1 : ops().argmax(x, n); }

const char* vector_ops_isa() { return ops().isa; }

}  // namespace nbits::kernels
