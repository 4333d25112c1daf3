// Fast fp32 helpers for the non-matmul part of decode (norms, attention dot
// products, softmax, logits argmax). Each call dispatches once (first use) to
// AVX2+FMA on x86 when present, else scalar. Results may differ from a
// sequential scalar loop by fp32 summation order only.
#pragma once

#include <cstdint>

namespace nbits::kernels {

// sum_i a[i] * b[i].
float vec_dot(const float* a, const float* b, int64_t n);

// y[i] += alpha * x[i].
void vec_axpy(float alpha, const float* x, float* y, int64_t n);

// y[i] = x[i] * weight[i] / sqrt(mean(x^2) + eps) (SimplifiedLayerNormalization); y may alias x.
void vec_rms_norm(const float* x, const float* weight, int64_t n, float eps, float* y);

// In place: x[i] = exp(x[i] - max) / sum_j exp(x[j] - max).
void vec_softmax(float* x, int64_t n);

// Index of the largest element (the first one on ties; NaNs are ignored); -1 if n == 0.
int64_t vec_argmax(const float* x, int64_t n);

// The ISA the helpers dispatched to ("avx2" or "scalar").
const char* vector_ops_isa();

}  // namespace nbits::kernels
