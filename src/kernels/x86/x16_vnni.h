// VNNI micro-kernels on x16-packed weights (quant/packed_x16.h), CompInt8: the tile of
// x16_vnni_tile_inl.h on AVX-512 VNNI (zmm; qgemm_x16_avx512vnni.cc; call only when the CPU has
// avx512f, avx512bw, avx512vl, avx512dq and avx512vnni) and on AVX-VNNI, the VEX vpdpbusd of
// AVX2-class cores without AVX-512 (ymm; qgemm_x16_avxvnni.cc; Intel Alder Lake and later
// client cores, their E-cores, Sierra Forest; call only when the CPU has avx2, fma, f16c and
// avx-vnni), and the AVX-512 VNNI tile on ymm (EVEX vpdpbusd; qgemm_x16_ymm_avx512vnni.cc; the same
// requirements as the zmm one). Declarations only: safe to include from files built without ISA flags.
// kAsym: the weight has explicit zero points (else 2^(bits-1)).
// kF16: the scales are packed as fp16 (PackedX16::scales_fp16).
#pragma once

#include <cstdint>

#include "kernels/x86/x16_avx2.h"

// For ISA suffix `isa`: qgemv_q{4,8}x16_<isa> (M = 1: y[16p..] for panels [p0, p1); _1p: one panel
// at a time, one stream; q4x16k: int4 with super-block scales, PackedX16::super_blocks > 0; q56x16: int5 /
// int6 codes, no zero points, scale format kSc as the AVX2 kernels' (x16_avx2.h)) and qgemm_q{4,8}x16_<isa>
// (M >= 2: register tiles of rows x panels); qgemm_x16_widened_<isa>: the GEMM on the formats only the AVX2
// kernels read (int5 / int6 codes, super-block scales), widened to a plain format a panel group at a time
// (widen_x16_panels_avx2).
#define NBITS_X16_VNNI_DECLARE(isa)                                                                         \
  template <bool kAsym, bool kF16>                                                                          \
  void qgemv_q4x16_##isa(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,     \
                         const int32_t* qsum, float* y, const float* bias);                                 \
  template <bool kAsym, bool kF16>                                                                          \
  void qgemv_q8x16_##isa(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,     \
                         const int32_t* qsum, float* y, const float* bias);                                 \
  template <bool kAsym, bool kF16>                                                                          \
  void qgemv_q4x16_1p_##isa(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,  \
                            const int32_t* qsum, float* y, const float* bias);                              \
  template <bool kAsym, bool kF16>                                                                          \
  void qgemv_q8x16_1p_##isa(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,  \
                            const int32_t* qsum, float* y, const float* bias);                              \
  template <bool kAsym>                                                                                     \
  void qgemv_q4x16k_##isa(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,    \
                          const int32_t* qsum, float* y, const float* bias);                                \
  template <bool kAsym>                                                                                     \
  void qgemv_q4x16k_1p_##isa(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa, \
                             const int32_t* qsum, float* y, const float* bias);                             \
  template <int kBits, int kSc>                                                                             \
  void qgemv_q56x16_1p_##isa(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa, \
                             const int32_t* qsum, float* y, const float* bias);                             \
  template <bool kAsym, bool kF16>                                                                          \
  void qgemm_q4x16_##isa(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,           \
                         const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias);   \
  template <bool kAsym>                                                                                     \
  void qgemm_x16_widened_##isa(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,     \
                               const float* sa, const int32_t* qsum, float* Y, int64_t ldy,                 \
                               const float* bias);                                                          \
  template <bool kAsym, bool kF16>                                                                          \
  void qgemm_q8x16_##isa(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,           \
                         const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias)

namespace nbits::kernels {

NBITS_X16_VNNI_DECLARE(avx512vnni);
NBITS_X16_VNNI_DECLARE(avxvnni);
NBITS_X16_VNNI_DECLARE(ymm_avx512vnni);

}  // namespace nbits::kernels
