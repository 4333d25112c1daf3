// CompFp32 M>=2 GEMM on int4 / int8 x16 panels, AVX-512F: fgemm_q{4,8}x16[h]_6x32_avx512, the
// dequantize-once GEMM of kernels/fgemm_x16_dequant_inl.h on zmm (16 columns a vector: a tile
// is 6 rows x 2 panels).
#include "kernels/fgemm_x16_dequant_inl.h"
#include "kernels/x86/f32_vec_inl.h"
#include "kernels/x86/x16_fp32_avx512.h"
#include "kernels/x86/x16_twins_avx2_inl.h"

namespace nbits::kernels {

NBITS_FGEMM_DEQUANT_DEFINE(avx2::DequantGemmV<x86::F32Zmm>, 6x32, avx512);

}  // namespace nbits::kernels
