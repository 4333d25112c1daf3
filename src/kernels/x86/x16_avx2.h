// AVX2 (+FMA) micro-kernels on x16-packed weights (quant/packed_x16.h).
// Declarations only: safe to include from files built without ISA flags.
// kAsym: the weight has explicit zero points (else 2^(bits-1)).
// kF16: the scales are packed as fp16 (PackedX16::scales_fp16).
// kSc (the CompInt8 kernels): the scale format, avx2::kScF32 / kScF16 / kScSuper (0, 1, 2; super:
// PackedX16::super_blocks > 0).
#pragma once

#include <cstdint>

#include "quant/packed_x16.h"

namespace nbits::kernels {

using quant::PackedX16;

// Explicit instantiations of kernel `fn` for both zero-point modes and both
// scale formats (the arguments are its parameter types).
#define NBITS_X16_INSTANTIATE(fn, ...)         \
  template void fn<false, false>(__VA_ARGS__); \
  template void fn<false, true>(__VA_ARGS__);  \
  template void fn<true, false>(__VA_ARGS__);  \
  template void fn<true, true>(__VA_ARGS__)

// The CompInt8 kernels' instantiations: both zero-point modes, three scale formats.
#define NBITS_X16_INT8_INSTANTIATE(fn, ...) \
  template void fn<false, 0>(__VA_ARGS__);  \
  template void fn<false, 1>(__VA_ARGS__);  \
  template void fn<false, 2>(__VA_ARGS__);  \
  template void fn<true, 0>(__VA_ARGS__);   \
  template void fn<true, 1>(__VA_ARGS__);   \
  template void fn<true, 2>(__VA_ARGS__)

// Panels [p, p + n) of `w` as an n-panel PackedX16 in a plain format (its buffer grows as needed):
// per-block fp32 scales and mins where `w` has super-block scales (exactly the source's), int8
// codes code_lo + 0..2^bits - 1 where it has int5 / int6 / lut4 ones. The input of any set's int4 / int8
// tiles: the VNNI GEMMs widen the formats only the AVX2 kernels read so. Needs avx2.
void widen_x16_panels_avx2(const PackedX16& w, int64_t p, int64_t n, PackedX16& out);

// CompInt8 activation quantization, bit-identical to quant::quantize_row_blocks.
void quantize_row_blocks_avx2(const float* a, int64_t K, int block, int8_t* qa, float* sa, int32_t* qsum);

// CompInt8, M = 1: y[16p..] for panels [p0, p1).
template <bool kAsym, int kSc>
void qgemv_q4x16_avx2(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
                      const int32_t* qsum, float* y, const float* bias);
template <bool kAsym, int kSc>
void qgemv_q8x16_avx2(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
                      const int32_t* qsum, float* y, const float* bias);

// CompInt8, M >= 2: int4 in tiles of 4 rows x 16 columns, int8 in 4 x 8.
template <bool kAsym, int kSc>
void qgemm_q4x16_4x16_avx2(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,
                           const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias);
template <bool kAsym, int kSc>
void qgemm_q8x16_4x8_avx2(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,
                          const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias);

// CompInt8 on int8 panels whose codes span fewer than kSpanBits bits (5, 6 or 7:
// PackedX16::code_span_bits(), GGUF Q5_0 / Q5_1 / Q5_K / Q6_K / MXFP4): the codes minus code_lo
// multiply unsigned with no sign trick, summed in int16 over several steps, for every row of a
// 4 x 16 tile (the M = 1 GEMV is its one-row tile). The "q8n<span>" kernels.
template <int kSpanBits, bool kAsym, int kSc>
void qgemv_q8nx16_avx2(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
                       const int32_t* qsum, float* y, const float* bias);
template <int kSpanBits, bool kAsym, int kSc>
void qgemm_q8nx16_4x16_avx2(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,
                            const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias);

// CompInt8 on int5 and int6 panels (PackedX16 bits 5 / 6: GGUF Q5_0 / Q5_1 / Q5_K / Q6_K at the
// file's size): the int4 kernels' steps with the high bits from the high-bit planes, for every
// row of a 4 x 16 tile (the M = 1 GEMV is its one-row tile).
template <bool kAsym, int kSc>
void qgemv_q5x16_avx2(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
                      const int32_t* qsum, float* y, const float* bias);
template <bool kAsym, int kSc>
void qgemm_q5x16_4x16_avx2(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,
                           const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias);
template <bool kAsym, int kSc>
void qgemv_q6x16_avx2(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
                      const int32_t* qsum, float* y, const float* bias);
template <bool kAsym, int kSc>
void qgemm_q6x16_4x16_avx2(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,
                           const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias);

// CompInt8 on lut4 panels (PackedX16::lut4, never with stored zero points: GGUF MXFP4 / NVFP4,
// IQ4_NL / IQ4_XS and the IQ lattices at 4 bits): the int4 kernels' steps with each index looked up
// in the weight's table, for every row of a 4 x 16 tile.
template <int kSc>
void qgemv_q4lx16_avx2(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
                       const int32_t* qsum, float* y, const float* bias);
template <int kSc>
void qgemm_q4lx16_4x16_avx2(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,
                            const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias);

// CompFp32, M = 1 (dequantize on the fly, fp32 FMA).
template <bool kAsym, bool kF16>
void fgemv_q4x16_avx2(const PackedX16& w, int64_t p0, int64_t p1, const float* a, const float* asum, float* y,
                      const float* bias);
template <bool kAsym, bool kF16>
void fgemv_q8x16_avx2(const PackedX16& w, int64_t p0, int64_t p1, const float* a, const float* asum, float* y,
                      const float* bias);

// CompFp32, M >= 2: tiles of 4 rows x 8 columns, each tile dequantizing its weights.
template <bool kAsym, bool kF16>
void fgemm_q4x16_4x8_avx2(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const float* A, int64_t lda,
                          float* Y, int64_t ldy, const float* bias);
template <bool kAsym, bool kF16>
void fgemm_q8x16_4x8_avx2(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const float* A, int64_t lda,
                          float* Y, int64_t ldy, const float* bias);

// CompFp32, M >= 2: each panel dequantized once for all rows (fgemm_x16_dequant_inl.h), tiles of
// 6 rows x 16 columns; below 4 rows the 4x8 tiles above.
template <bool kAsym, bool kF16>
void fgemm_q4x16_6x16_avx2(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const float* A, int64_t lda,
                           float* Y, int64_t ldy, const float* bias);
template <bool kAsym, bool kF16>
void fgemm_q8x16_6x16_avx2(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const float* A, int64_t lda,
                           float* Y, int64_t ldy, const float* bias);

}  // namespace nbits::kernels
