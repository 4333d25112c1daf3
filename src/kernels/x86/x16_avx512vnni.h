// AVX-512 VNNI micro-kernels on x16-packed weights (quant/packed_x16.h), CompInt8.
// Declarations only: safe to include from files built without ISA flags; call
// only when the CPU has avx512f, avx512bw, avx512vl and avx512vnni.
// kAsym: the weight has explicit zero points (else 2^(bits-1)).
// kF16: the scales are packed as fp16 (PackedX16::scales_fp16).
#pragma once

#include <cstdint>

#include "kernels/x86/x16_avx2.h"

namespace nbits::kernels {

// M = 1: y[16p..] for panels [p0, p1).
template <bool kAsym, bool kF16>
void qgemv_q4x16_avx512vnni(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
                            const int32_t* qsum, float* y, const float* bias);
template <bool kAsym, bool kF16>
void qgemv_q8x16_avx512vnni(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
                            const int32_t* qsum, float* y, const float* bias);

// M >= 2: register tiles of rows x panels (qgemm_x16_avx512vnni.cc).
template <bool kAsym, bool kF16>
void qgemm_q4x16_avx512vnni(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,
                            const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias);
template <bool kAsym, bool kF16>
void qgemm_q8x16_avx512vnni(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,
                            const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias);

}  // namespace nbits::kernels
