// AVX-VNNI micro-kernels on x16-packed weights (quant/packed_x16.h), CompInt8: the VEX-encoded
// vpdpbusd of AVX2-class cores without AVX-512 (Intel Alder Lake and later client cores, their
// E-cores, Sierra Forest). Declarations only: safe to include from files built without ISA
// flags; call only when the CPU has avx2, fma, f16c and avx-vnni.
// kAsym: the weight has explicit zero points (else 2^(bits-1)).
// kF16: the scales are packed as fp16 (PackedX16::scales_fp16).
#pragma once

#include <cstdint>

#include "kernels/x86/x16_avx2.h"

namespace nbits::kernels {

// M = 1: y[16p..] for panels [p0, p1).
template <bool kAsym, bool kF16>
void qgemv_q4x16_avxvnni(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
                         const int32_t* qsum, float* y, const float* bias);
template <bool kAsym, bool kF16>
void qgemv_q8x16_avxvnni(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
                         const int32_t* qsum, float* y, const float* bias);

// M >= 2: register tiles of rows x panels (qgemm_x16_avxvnni.cc).
template <bool kAsym, bool kF16>
void qgemm_q4x16_avxvnni(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,
                         const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias);
template <bool kAsym, bool kF16>
void qgemm_q8x16_avxvnni(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,
                         const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias);

}  // namespace nbits::kernels
