// Fast fp32 helpers for the non-matmul part of decode and prefill (norms,
// attention dot products, softmax, exp/sigmoid, elementwise arithmetic, logits
// argmax). Each call dispatches once (first use) to AVX2+FMA on x86 (NEON on arm64) when
// present, else scalar. Sums may differ from a sequential scalar loop by fp32
// summation order only; exp is within ~2 ulp of the correctly rounded value.
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

// Largest element (NaNs ignored); -inf if n == 0.
float vec_max(const float* x, int64_t n);

// In place: x[i] = exp(x[i] - shift); returns the sum of the new x.
float vec_exp_shift_sum(float* x, int64_t n, float shift);

// x[i] *= s.
void vec_scale(float* x, float s, int64_t n);

// y[i] = exp(x[i]) (+inf -> inf, -inf -> 0, NaN -> NaN, subnormal results kept); y may alias x.
void vec_exp(const float* x, float* y, int64_t n);

// y[i] = 1 / (1 + exp(-x[i])), accurate in relative terms for large negative x too; y may alias x.
void vec_sigmoid(const float* x, float* y, int64_t n);

// SiLU / SwiGLU in one pass: y[i] = (x[i] * sigmoid(x[i])) * up[i] (up == nullptr: no up factor);
// bitwise equal to vec_sigmoid followed by the vec_binary multiplies. y may alias x or up.
void vec_silu_mul(const float* x, const float* up, float* y, int64_t n);

// For g < nx: y[g * y_stride + j] = alpha * dot(x + g * x_stride, M + j * n), j < rows (M is
// rows x n, row-major). Several x at once share the loads of M.
void vec_dot_rows(const float* x, int64_t nx, int64_t x_stride, const float* M, int64_t rows, int64_t n,
                  float alpha, float* y, int64_t y_stride);

// For g < np: y[g * y_stride + i] += sum_j p[g * p_stride + j] * M[j * n + i], i < n, j < rows
// (weighted sums of M's rows). Several p at once share the loads of M.
void vec_accumulate_rows(const float* p, int64_t np, int64_t p_stride, const float* M, int64_t rows,
                         int64_t n, float* y, int64_t y_stride);

// vec_dot_rows / vec_accumulate_rows with M in IEEE fp16 (an fp16 KV cache), widened to fp32.
void vec_dot_rows_f16(const float* x, int64_t nx, int64_t x_stride, const uint16_t* M, int64_t rows,
                      int64_t n, float alpha, float* y, int64_t y_stride);
void vec_accumulate_rows_f16(const float* p, int64_t np, int64_t p_stride, const uint16_t* M, int64_t rows,
                             int64_t n, float* y, int64_t y_stride);

// out[r] = sum_i x[r * n + i]^2 for r < rows, each a sequential fp32 sum (product rounded, then
// added, in index order): bitwise equal to that scalar loop; rows are interleaved for speed.
void vec_sum_squares_rows(const float* x, int64_t rows, int64_t n, float* out);

enum class VecOp { kAdd, kSub, kMul, kDiv };

// y[i] = a[i] op b[i]; y may alias a or b.
void vec_binary(VecOp op, const float* a, const float* b, float* y, int64_t n);

// y[i] = a[i] op b (b_first = false) or b op a[i] (b_first = true); y may alias a.
void vec_binary_scalar(VecOp op, const float* a, float b, bool b_first, float* y, int64_t n);

// The ISA the helpers dispatched to ("avx2", "neon" or "scalar").
const char* vector_ops_isa();

}  // namespace nbits::kernels
