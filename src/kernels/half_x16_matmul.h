// fp16 / bf16 weights B [K, N] (a MatMul's constant right operand) kept in half
// precision and packed once at load into panels of 16 output columns: panel p
// holds, for k = 0..K-1, the 16 halves of columns 16p..16p+15 (zero past N), so
// a kernel streams one contiguous run per panel at 2 bytes per weight (half the
// traffic of widened fp32) and widens in registers. Every y element is the fp32
// sum over k in order of fma(A[m,k], float(B[k,n]), acc): the SIMD kernels are
// bitwise equal to the scalar reference.
#pragma once

#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "quant/packed_x16.h"

namespace nbits::kernels {

struct PackedHalfX16 {
  bool bf16 = false;  // halves are bfloat16 (else IEEE fp16)
  int64_t K = 0, N = 0, panels = 0;
  quant::AlignedBytes data;
  const uint16_t* panel(int64_t p) const {
    return reinterpret_cast<const uint16_t*>(data.data()) + p * K * 16;
  }
};

// Packs row-major B [K, N] (halves), panels in parallel when a pool is given.
PackedHalfX16 pack_half_x16(const uint16_t* B, int64_t K, int64_t N, bool bf16, ThreadPool* pool = nullptr);

// Y[m, 16p + j] = sum_k A[m, k] * B[k, 16p + j] for m < M, panels [p0, p1) (columns
// past N are not written). A rows `lda` floats apart, Y rows `ldy`.
using HalfX16Gemm = void (*)(const PackedHalfX16& w, int64_t p0, int64_t p1, int64_t M, const float* A,
                             int64_t lda, float* Y, int64_t ldy);

struct HalfX16Kernel {
  const char* name;
  HalfX16Gemm gemm;
};

// The scalar reference, every kernel this CPU can run (most preferred first, the
// reference last), and the best of them (the dispatch point).
const HalfX16Kernel& half_x16_ref();
const std::vector<HalfX16Kernel>& half_x16_available();
const HalfX16Kernel& half_x16_best();

}  // namespace nbits::kernels
