// QuantizedMatrix accessors and the single MatMulNBits dispatch point.
#include "kernels/matmul_nbits.h"

#include <vector>

#include "base/error.h"
#include "kernels/ref/matmul_nbits_ref.h"

#if defined(NBITS_ARCH_X86)
#include "kernels/x86/register_x86.h"
#endif
#if defined(NBITS_ARCH_RISCV)
#include "kernels/rvv/register_rvv.h"
#endif
#if defined(NBITS_ARCH_ARM64)
#include "kernels/arm64/register_arm64.h"
#endif

namespace nbits::kernels {

int QuantizedMatrix::code(int64_t n, int64_t k) const {
  const int64_t b = k / block_size, j = k % block_size;
  const uint8_t* blob = codes + (n * k_blocks() + b) * blob_bytes();
  switch (bits) {
    case 8:
      return blob[j];
    case 4:
      return (blob[j / 2] >> ((j & 1) * 4)) & 0xf;
    case 2:
      return (blob[j / 4] >> ((j & 3) * 2)) & 0x3;
    default:
      NBITS_ASSERT(false);
  }
}

float QuantizedMatrix::zero_point(int64_t n, int64_t b) const {
  if (zero_points_f != nullptr) return zero_points_f[n * k_blocks() + b];
  if (zero_points == nullptr) return static_cast<float>(1 << (bits - 1));
  const uint8_t* row = zero_points + n * zp_row_bytes();
  switch (bits) {
    case 8:
      return row[b];
    case 4:
      return static_cast<float>((row[b / 2] >> ((b & 1) * 4)) & 0xf);
    case 2:
      return static_cast<float>((row[b / 4] >> ((b & 3) * 2)) & 0x3);
    default:
      NBITS_ASSERT(false);
  }
}

std::span<const MatMulNBitsKernel> matmul_nbits_kernels() {
  static const std::vector<MatMulNBitsKernel> table = [] {
    std::vector<MatMulNBitsKernel> t;
#if defined(NBITS_ARCH_X86)
    register_x86_matmul_nbits(t);
#endif
#if defined(NBITS_ARCH_RISCV)
    register_rvv_matmul_nbits(t);
#endif
#if defined(NBITS_ARCH_ARM64)
    register_arm64_matmul_nbits(t);
#endif
    register_ref_matmul_nbits(t);
    return t;
  }();
  return table;
}

std::unique_ptr<PackedMatMul> make_matmul_nbits(const QuantizedMatrix& w, Compute compute,
                                                const CpuFeatures& cpu) {
  return make_matmul_nbits(w, compute, PackOptions{}, cpu);
}

std::unique_ptr<PackedMatMul> make_matmul_nbits(const QuantizedMatrix& w, Compute compute,
                                                const PackOptions& options, const CpuFeatures& cpu) {
  NBITS_CHECK(w.bits == 2 || w.bits == 4 || w.bits == 8, "MatMulNBits: bits=", w.bits,
              " is not supported (2, 4 or 8)");
  NBITS_CHECK(w.block_size >= 16 && (w.block_size & (w.block_size - 1)) == 0,
              "MatMulNBits: block_size=", w.block_size, " must be a power of two >= 16");
  for (const auto& k : matmul_nbits_kernels())
    if (k.compute == compute && k.supports(w, cpu)) return k.pack_opts(w, options);
  // No int8 kernel for this weight (e.g. float zero points): ORT computes in fp32 then too.
  if (compute == Compute::kInt8) return make_matmul_nbits(w, Compute::kFp32, options, cpu);
  fail("MatMulNBits: no kernel for bits=", w.bits, " block_size=", w.block_size);
}

}  // namespace nbits::kernels
