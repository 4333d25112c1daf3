// AVX2+FMA bodies of kernels/vector_ops.h (declarations; no intrinsics here).
#pragma once

#include <cstdint>

namespace nbits::kernels {

float dot_avx2(const float* a, const float* b, int64_t n);
void axpy_avx2(float alpha, const float* x, float* y, int64_t n);
// y[i] = x[i] * s * w[i]; y may alias x.
void scale_mul_avx2(const float* x, const float* w, float s, int64_t n, float* y);
int64_t argmax_avx2(const float* x, int64_t n);

}  // namespace nbits::kernels
