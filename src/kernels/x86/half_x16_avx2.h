// AVX2+FMA+F16C and AVX-512F bodies of kernels/half_x16_matmul.h (declarations; no intrinsics here).
#pragma once

#include "kernels/half_x16_matmul.h"

namespace nbits::kernels {

void hgemm_x16_avx2(const PackedHalfX16& w, int64_t p0, int64_t p1, int64_t M, const float* A, int64_t lda,
                    float* Y, int64_t ldy);
void hgemm_x16_avx512(const PackedHalfX16& w, int64_t p0, int64_t p1, int64_t M, const float* A, int64_t lda,
                      float* Y, int64_t ldy);

}  // namespace nbits::kernels
