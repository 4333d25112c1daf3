// AMX-INT8 GEMM micro-kernels on x16-packed weights (quant/packed_x16.h), CompInt8, weights
// without stored zero points (PackedX16::default_zp()), with or without block mins. Declarations only:
// safe to include from files built without ISA flags; call only when the CPU has AMX-TILE and
// AMX-INT8 with the kernel's permission to use the tile state (CpuFeatures::amx_int8) and the
// AVX-512 VNNI set (rows past the last 16-row tile run there).
// kF16: the scales are packed as fp16 (PackedX16::scales_fp16).
#pragma once

#include <cstdint>

#include "quant/packed_x16.h"

namespace nbits::kernels {

using quant::PackedX16;

// M >= 2: 16-row x 16-column tiles on the tile unit, rows past the last whole 16 on the VNNI tile.
template <bool kF16>
void qgemm_q4x16_amx(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa, const float* sa,
                     const int32_t* qsum, float* Y, int64_t ldy, const float* bias);
template <bool kF16>
void qgemm_q8x16_amx(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa, const float* sa,
                     const int32_t* qsum, float* Y, int64_t ldy, const float* bias);

}  // namespace nbits::kernels
