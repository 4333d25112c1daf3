// Scalar reference MatMulNBits (CompFp32 and CompInt8): the oracle.
#pragma once

#include <vector>

#include "kernels/matmul_nbits.h"

namespace nbits::kernels {

void register_ref_matmul_nbits(std::vector<MatMulNBitsKernel>& table);

// Direct (unpacked) reference on the ONNX layout, for tests:
// Y[M,N] = A[M,K] * dequant(W)^T (+ bias).
void matmul_nbits_ref_fp32(const QuantizedMatrix& w, const float* A, int64_t M, float* Y, const float* bias);
void matmul_nbits_ref_int8(const QuantizedMatrix& w, const float* A, int64_t M, float* Y, const float* bias);
// The exact int32 dot of block b of row n with a quantized activation block.
int32_t block_dot_ref(const QuantizedMatrix& w, int64_t n, int64_t b, const int8_t* qa_block);

}  // namespace nbits::kernels
