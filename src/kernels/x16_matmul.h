// The PackedMatMul for x16-packed weights (quant/packed_x16.h): activation
// quantization, scratch, threading over panels; the ISA micro-kernels plug in
// through the function tables below (filled by kernels/x86, kernels/rvv, ...).
#pragma once

#include <memory>
#include <vector>

#include "kernels/matmul_nbits.h"
#include "quant/packed_x16.h"

namespace nbits::kernels {

// Micro-kernels for CompInt8. Panels [p0, p1); `qa` rows are k_blocks*block
// int8 (zero past K), `sa` / `qsum` rows are k_blocks (scale and integer sum of
// each activation block). Y rows have stride ldy; bias may be null.
struct X16Int8Kernels {
  const char* gemv_name;
  const char* gemm_name;
  // Same numerics as quant::quantize_row_blocks, plus integer block sums.
  void (*quantize)(const float* a, int64_t K, int block, int8_t* qa, float* sa, int32_t* qsum);
  void (*gemv)(const quant::PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
               const int32_t* qsum, float* y, const float* bias);
  void (*gemm)(const quant::PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,
               const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias);
};

// Micro-kernels for CompFp32. `A` rows have k_blocks*block floats (zero past K),
// stride lda; gemv also gets `asum`, the sum of each block of its A row.
struct X16Fp32Kernels {
  const char* gemv_name;
  const char* gemm_name;
  void (*gemv)(const quant::PackedX16& w, int64_t p0, int64_t p1, const float* a, const float* asum, float* y,
               const float* bias);
  void (*gemm)(const quant::PackedX16& w, int64_t p0, int64_t p1, int64_t M, const float* A, int64_t lda,
               float* Y, int64_t ldy, const float* bias);
};

// Scalar quantize with integer block sums (the reference numerics).
void quantize_row_blocks_isum(const float* a, int64_t K, int block, int8_t* qa, float* sa, int32_t* qsum);

// Packs `w` as x16 and wraps it with the given micro-kernels.
// The returned object keeps its activation scratch per calling thread (grown to
// the largest M seen), so sessions forked from one load may run it at once;
// each run() uses the pool's threads internally.
std::unique_ptr<PackedMatMul> make_x16_int8(const QuantizedMatrix& w, const X16Int8Kernels& k);
std::unique_ptr<PackedMatMul> make_x16_fp32(const QuantizedMatrix& w, const X16Fp32Kernels& k);
// The same honouring `options`: fp16 scales (when asked and the scales fit,
// quant::scales_fit_fp16) run on `k16`, float scales on `k32`. fold_uniform_zp:
// see quant::pack_x16 (for micro-kernels that read PackedX16::default_zp()).
std::unique_ptr<PackedMatMul> make_x16_int8(const QuantizedMatrix& w, const PackOptions& options,
                                            const X16Int8Kernels& k32, const X16Int8Kernels& k16,
                                            bool fold_uniform_zp = false);
std::unique_ptr<PackedMatMul> make_x16_fp32(const QuantizedMatrix& w, const PackOptions& options,
                                            const X16Fp32Kernels& k32, const X16Fp32Kernels& k16);

}  // namespace nbits::kernels
