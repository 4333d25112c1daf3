// AVX2+FMA bodies of kernels/vector_ops.h (declarations; no intrinsics here).
#pragma once

#include <cstdint>

namespace nbits::kernels {

float dot_avx2(const float* a, const float* b, int64_t n);
void axpy_avx2(float alpha, const float* x, float* y, int64_t n);
// y[i] = x[i] * s * w[i]; y may alias x.
void scale_mul_avx2(const float* x, const float* w, float s, int64_t n, float* y);
int64_t argmax_avx2(const float* x, int64_t n);
float max_avx2(const float* x, int64_t n);
float exp_shift_sum_avx2(float* x, int64_t n, float shift);
void scale_avx2(float* x, float s, int64_t n);
void exp_avx2(const float* x, float* y, int64_t n);
void sigmoid_avx2(const float* x, float* y, int64_t n);
void silu_mul_avx2(const float* x, const float* up, float* y, int64_t n);
void dot_rows_avx2(const float* x, int64_t nx, int64_t x_stride, const float* M, int64_t rows, int64_t n,
                   float alpha, float* y, int64_t y_stride);
void accumulate_rows_avx2(const float* p, int64_t np, int64_t p_stride, const float* M, int64_t rows,
                          int64_t n, float* y, int64_t y_stride);
// The same with M in IEEE fp16 (F16C widening).
void dot_rows_f16_avx2(const float* x, int64_t nx, int64_t x_stride, const uint16_t* M, int64_t rows,
                       int64_t n, float alpha, float* y, int64_t y_stride);
void accumulate_rows_f16_avx2(const float* p, int64_t np, int64_t p_stride, const uint16_t* M, int64_t rows,
                              int64_t n, float* y, int64_t y_stride);
// out[r] = sequential fp32 sum of squares of row r (bitwise like the scalar loop), 8 rows at a time.
void sum_squares_rows_avx2(const float* x, int64_t rows, int64_t n, float* out);
// op: 0 add, 1 sub, 2 mul, 3 div (kernels::VecOp order). mode: 0 both vectors, 1 b scalar, 2 a scalar.
void binary_avx2(int op, int mode, const float* a, const float* b, float* y, int64_t n);

}  // namespace nbits::kernels
