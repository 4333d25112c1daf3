// Small vector helpers used by the ops' inner loops (plain loops the compiler
// vectorizes). The SIMD-dispatched helpers live in kernels/vector_ops.h.
#pragma once

#include <cstdint>

namespace nbits::ops {

// y[i] += alpha * x[i]
inline void axpy(float alpha, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

// y[i] = x[i] * inv * gamma[i]
inline void scale_by(const float* x, float inv, const float* gamma, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = gamma[i] * (inv * x[i]);
}

}  // namespace nbits::ops
