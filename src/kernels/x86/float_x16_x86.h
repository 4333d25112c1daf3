// AVX2+FMA+F16C and AVX-512F bodies of kernels/float_x16_matmul.h (declarations; no intrinsics here).
#pragma once

#include "kernels/float_x16_matmul.h"

namespace nbits::kernels {

void float_x16_gemm_avx2(const PackedFloatX16& w, int64_t p0, int64_t p1, int64_t M, const float* A,
                         int64_t lda, float* Y, int64_t ldy);
void float_x16_gemm_avx512(const PackedFloatX16& w, int64_t p0, int64_t p1, int64_t M, const float* A,
                           int64_t lda, float* Y, int64_t ldy);

}  // namespace nbits::kernels
