// Float weights B [K, N] (a MatMul's constant right operand: fp16, bf16 or fp32)
// packed once at load into panels of 16 output columns: panel p holds, for
// k = 0..K-1, the 16 elements of columns 16p..16p+15 (zero past N), so a kernel
// streams one contiguous run per panel (2 bytes per weight for halves, widened in
// registers; 4 for fp32) with a register tile of rows x panels. Every y element is
// the fp32 sum over k in order of fma(A[m,k], float(B[k,n]), acc): the SIMD kernels
// are bitwise equal to the scalar reference.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/matmul_nbits.h"
#include "quant/packed_x16.h"

namespace nbits::kernels {

enum class X16Float { kF16, kBF16, kF32 };

struct PackedFloatX16 {
  X16Float elem = X16Float::kF32;
  int64_t K = 0, N = 0, panels = 0;
  quant::AlignedBytes data;
  size_t elem_bytes() const { return elem == X16Float::kF32 ? 4 : 2; }
  // Panel p: K x 16 elements of type T (uint16_t for the halves, float for fp32).
  template <typename T>
  const T* panel(int64_t p) const {
    return reinterpret_cast<const T*>(data.data()) + p * K * 16;
  }
};

// Packs row-major B [K, N] (elements of `elem`: uint16_t halves or floats), panels
// in parallel when a pool is given.
// b_nk: B is stored [N, K] (the transpose of the usual [K, N]: a tied embedding read as the
// lm_head, packed without a transposed copy).
// consumed (b_nk only): called with each range of B's bytes once its panels are packed (from
// the worker that packed them), so a caller may let the file pages behind it go as packing
// proceeds: the peak is then the packed copy, not packed + original.
PackedFloatX16 pack_float_x16(const void* B, int64_t K, int64_t N, X16Float elem, ThreadPool* pool = nullptr,
                              bool b_nk = false,
                              const std::function<void(const void*, size_t)>& consumed = {});

// Y[m, 16p + j] = sum_k A[m, k] * B[k, 16p + j] for m < M, panels [p0, p1) (columns
// past N are not written). A rows `lda` floats apart, Y rows `ldy`.
using FloatX16Gemm = void (*)(const PackedFloatX16& w, int64_t p0, int64_t p1, int64_t M, const float* A,
                              int64_t lda, float* Y, int64_t ldy);

struct FloatX16Kernel {
  const char* half_name;  // for fp16/bf16 panels (hgemm_x16_...)
  const char* fp32_name;  // for fp32 panels (sgemm_x16_...)
  FloatX16Gemm gemm;
  const char* name(X16Float e) const { return e == X16Float::kF32 ? fp32_name : half_name; }
};

// The scalar reference, every kernel this CPU can run (most preferred first, the
// reference last), and the best of them (the dispatch point).
const FloatX16Kernel& float_x16_ref();
const std::vector<FloatX16Kernel>& float_x16_available();
const FloatX16Kernel& float_x16_best();

// Packed float weights behind the PackedMatMul interface (Y = A W^T + bias, panels split over the
// pool, the best kernel's arithmetic): what float expert matrices (ORT's MoE op) give the routed
// FFN, beside the quantized ones.
std::unique_ptr<PackedMatMul> make_float_x16_matmul(PackedFloatX16 w);

}  // namespace nbits::kernels
