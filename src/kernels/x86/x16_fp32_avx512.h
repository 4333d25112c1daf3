// CompFp32 x16 kernels on AVX-512F (the x16_avx512_fp32 set).
// Declarations only: safe to include from files built without ISA flags.
#pragma once

#include "kernels/x86/x16_avx2.h"

namespace nbits::kernels {

// CompFp32, M = 1: the AVX2 GEMV's computation on 16 columns per vector.
template <bool kAsym, bool kF16>
void fgemv_q4x16_avx512(const PackedX16& w, int64_t p0, int64_t p1, const float* a, const float* asum,
                        float* y, const float* bias);
template <bool kAsym, bool kF16>
void fgemv_q8x16_avx512(const PackedX16& w, int64_t p0, int64_t p1, const float* a, const float* asum,
                        float* y, const float* bias);

// CompFp32, M >= 2: each pair of panels dequantized once for all rows (fgemm_x16_dequant_inl.h),
// tiles of 6 rows x 32 columns; below 4 rows the AVX2 4x8 tiles.
template <bool kAsym, bool kF16>
void fgemm_q4x16_6x32_avx512(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const float* A,
                             int64_t lda, float* Y, int64_t ldy, const float* bias);
template <bool kAsym, bool kF16>
void fgemm_q8x16_6x32_avx512(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const float* A,
                             int64_t lda, float* Y, int64_t ldy, const float* bias);

}  // namespace nbits::kernels
