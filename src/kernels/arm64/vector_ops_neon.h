// NEON bodies of kernels/vector_ops.h (declarations; no intrinsics here). They mirror the AVX2
// helpers lane for lane (an 8-float AVX2 register = two 128-bit NEON registers, the same
// accumulator splits, horizontal-sum trees, FMA and tail handling), so on the same inputs they
// return the same bits as the x86 build's AVX2 path; kernels/vector_ops.cc picks them on arm64.
#pragma once

#include <cstdint>

namespace nbits::kernels {

float dot_neon(const float* a, const float* b, int64_t n);
void axpy_neon(float alpha, const float* x, float* y, int64_t n);
void scale_mul_neon(const float* x, const float* w, float s, int64_t n, float* y);
int64_t argmax_neon(const float* x, int64_t n);
float max_neon(const float* x, int64_t n);
float exp_shift_sum_neon(float* x, int64_t n, float shift);
void scale_neon(float* x, float s, int64_t n);
void exp_neon(const float* x, float* y, int64_t n);
void sigmoid_neon(const float* x, float* y, int64_t n);
void silu_mul_neon(const float* x, const float* up, float* y, int64_t n);
void dot_rows_neon(const float* x, int64_t nx, int64_t x_stride, const float* M, int64_t rows, int64_t n,
                   float alpha, float* y, int64_t y_stride);
void accumulate_rows_neon(const float* p, int64_t np, int64_t p_stride, const float* M, int64_t rows,
                          int64_t n, float* y, int64_t y_stride);
void dot_rows_f16_neon(const float* x, int64_t nx, int64_t x_stride, const uint16_t* M, int64_t rows,
                       int64_t n, float alpha, float* y, int64_t y_stride);
void accumulate_rows_f16_neon(const float* p, int64_t np, int64_t p_stride, const uint16_t* M, int64_t rows,
                              int64_t n, float* y, int64_t y_stride);
void sum_squares_rows_neon(const float* x, int64_t rows, int64_t n, float* out);
void binary_neon(int op, int mode, const float* a, const float* b, float* y, int64_t n);

}  // namespace nbits::kernels
