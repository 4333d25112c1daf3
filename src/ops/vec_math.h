// Small vector helpers used by the ops' inner loops (plain loops the compiler
// vectorizes; a SIMD version can replace any of them without touching ops).
#pragma once

#include <cmath>
#include <cstdint>

namespace nbits::ops {

// sum_i a[i] * b[i]
inline float dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  float s = 0.0f;
  for (; i < n; ++i) s += a[i] * b[i];
  return s + ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

// y[i] += alpha * x[i]
inline void axpy(float alpha, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

// sum_i x[i]^2 (sequential fp32, like ORT's classic kernel and llama2.c)
inline float sum_squares(const float* x, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) s += x[i] * x[i];
  return s;
}

// y[i] = x[i] * inv * gamma[i]
inline void scale_by(const float* x, float inv, const float* gamma, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = gamma[i] * (inv * x[i]);
}

// In place: p = softmax(p) over n entries; extra_exp adds exp(sink - max) style
// terms to the denominator (0 = none). Returns nothing; n must be >= 1.
inline void softmax(float* p, int64_t n, bool smooth = false) {
  float mx = p[0];
  for (int64_t i = 1; i < n; ++i) mx = p[i] > mx ? p[i] : mx;
  if (smooth && mx < 0.0f) mx = 0.0f;
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    p[i] = std::exp(p[i] - mx);
    sum += p[i];
  }
  if (smooth) sum += std::exp(-mx);
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) p[i] *= inv;
}

}  // namespace nbits::ops
