// CompFp32 M>=2 GEMM on int4 / int8 x16 panels, AVX2: fgemm_q{4,8}x16[h]_6x16_avx2, the
// dequantize-once GEMM of kernels/fgemm_x16_dequant_inl.h on ymm (8 columns a vector: a tile
// is 6 rows x 1 panel, 12 of the 16 registers); below 4 rows the 4x8 tile (fgemm_q4x16_4x8_avx2).
#include "kernels/fgemm_x16_dequant_inl.h"
#include "kernels/x86/f32_vec_inl.h"
#include "kernels/x86/x16_avx2.h"
#include "kernels/x86/x16_twins_avx2_inl.h"

namespace nbits::kernels {

NBITS_FGEMM_DEQUANT_DEFINE(avx2::DequantGemmV<x86::F32Ymm>, 6x16, avx2);

}  // namespace nbits::kernels
