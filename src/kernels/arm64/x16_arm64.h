// arm64 micro-kernels on x16-packed weights (quant/packed_x16.h), plugged into the x16 driver
// (kernels/x16_matmul.h). Declarations only: safe to include from files built for plain ARMv8-A.
// File suffixes choose -march (cmake/sources.cmake): *_neon.cc baseline, *_dotprod.cc
// armv8.2-a+dotprod, *_i8mm.cc armv8.2-a+dotprod+i8mm; each set is registered behind its HWCAP.
// kAsym: the weight has explicit zero points (else 2^(bits-1)); kF16: fp16 scales.
#pragma once

#include <cstdint>

#include "quant/packed_x16.h"

namespace nbits::kernels {

using quant::PackedX16;

// Explicit instantiations of kernel `fn` for both zero-point modes and both scale formats.
#define NBITS_A64_INSTANTIATE(fn, ...)         \
  template void fn<false, false>(__VA_ARGS__); \
  template void fn<false, true>(__VA_ARGS__);  \
  template void fn<true, false>(__VA_ARGS__);  \
  template void fn<true, true>(__VA_ARGS__)
// lut4 kernels (no zero points): both scale formats.
#define NBITS_A64_INSTANTIATE_LUT4(fn, ...) \
  template void fn<false>(__VA_ARGS__);     \
  template void fn<true>(__VA_ARGS__)

// CompInt8 activation quantization, bit-identical to quant::quantize_row_blocks (+ integer sums).
void quantize_row_blocks_neon(const float* a, int64_t K, int block, int8_t* qa, float* sa, int32_t* qsum);

#define NBITS_A64_GEMV_ARGS                                                                           \
  const PackedX16 &w, int64_t p0, int64_t p1, const int8_t *qa, const float *sa, const int32_t *qsum, \
      float *y, const float *bias
#define NBITS_A64_GEMM_ARGS                                                                 \
  const PackedX16 &w, int64_t p0, int64_t p1, int64_t M, const int8_t *qa, const float *sa, \
      const int32_t *qsum, float *Y, int64_t ldy, const float *bias

// CompInt8 M = 1 GEMV (one int32 lane per column, 4 columns per register) and M >= 2 GEMM in
// tiles of 4 rows x 8 columns. _dotprod: SDOT by element; _neon: the same dots with SMULL +
// pairwise adds (ARMv8.0 cores: Cortex-A53/A72).
template <bool kAsym, bool kF16>
void qgemv_q4x16_dotprod(NBITS_A64_GEMV_ARGS);
template <bool kAsym, bool kF16>
void qgemv_q8x16_dotprod(NBITS_A64_GEMV_ARGS);
template <bool kAsym, bool kF16>
void qgemm_q4x16_4x8_dotprod(NBITS_A64_GEMM_ARGS);
template <bool kAsym, bool kF16>
void qgemm_q8x16_4x8_dotprod(NBITS_A64_GEMM_ARGS);
template <bool kAsym, bool kF16>
void qgemv_q4x16_neon(NBITS_A64_GEMV_ARGS);
template <bool kAsym, bool kF16>
void qgemv_q8x16_neon(NBITS_A64_GEMV_ARGS);
template <bool kAsym, bool kF16>
void qgemm_q4x16_4x8_neon(NBITS_A64_GEMM_ARGS);
template <bool kAsym, bool kF16>
void qgemm_q8x16_4x8_neon(NBITS_A64_GEMM_ARGS);

// lut4 panels (PackedX16::lut4; never with zero points): the int4 bodies reading each nibble
// through the weight's table (TBL), so the dots are the int8 kernels' on the codes it stands for.
template <bool kF16>
void qgemv_q4lx16_dotprod(NBITS_A64_GEMV_ARGS);
template <bool kF16>
void qgemm_q4lx16_4x8_dotprod(NBITS_A64_GEMM_ARGS);
template <bool kF16>
void qgemv_q4lx16_neon(NBITS_A64_GEMV_ARGS);
template <bool kF16>
void qgemm_q4lx16_4x8_neon(NBITS_A64_GEMM_ARGS);
template <bool kF16>
void qgemm_q4lx16_4x8_i8mm(NBITS_A64_GEMM_ARGS);

// CompInt8 M >= 2 GEMM with SMMLA (i8mm): tiles of 2 row pairs x 4 column pairs (4 rows x 8
// columns); the x16 code groups are zipped into SMMLA's 2x8 column tiles in registers.
template <bool kAsym, bool kF16>
void qgemm_q4x16_4x8_i8mm(NBITS_A64_GEMM_ARGS);
template <bool kAsym, bool kF16>
void qgemm_q8x16_4x8_i8mm(NBITS_A64_GEMM_ARGS);

// CompFp32 (dequantize on the fly, FMLA), baseline NEON.
#define NBITS_A64_FGEMV_ARGS \
  const PackedX16 &w, int64_t p0, int64_t p1, const float *a, const float *asum, float *y, const float *bias
#define NBITS_A64_FGEMM_ARGS                                                                                 \
  const PackedX16 &w, int64_t p0, int64_t p1, int64_t M, const float *A, int64_t lda, float *Y, int64_t ldy, \
      const float *bias
template <bool kAsym, bool kF16>
void fgemv_q4x16_neon(NBITS_A64_FGEMV_ARGS);
template <bool kAsym, bool kF16>
void fgemv_q8x16_neon(NBITS_A64_FGEMV_ARGS);
template <bool kAsym, bool kF16>
void fgemm_q4x16_4x8_neon(NBITS_A64_FGEMM_ARGS);
template <bool kAsym, bool kF16>
void fgemm_q8x16_4x8_neon(NBITS_A64_FGEMM_ARGS);
template <bool kAsym, bool kF16>
void fgemm_q4x16_6x16_neon(NBITS_A64_FGEMM_ARGS);
template <bool kAsym, bool kF16>
void fgemm_q8x16_6x16_neon(NBITS_A64_FGEMM_ARGS);

}  // namespace nbits::kernels
