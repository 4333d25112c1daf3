#include "kernels/x86/register_x86.h"

#include "kernels/x16_matmul.h"
#include "kernels/x86/x16_avx2.h"

namespace nbits::kernels {
namespace {

bool avx2_ok(const QuantizedMatrix& w, const CpuFeatures& cpu) {
  return cpu.avx2 && cpu.fma && quant::x16_packable(w);
}

template <bool kAsym>
X16Int8Kernels avx2_int8(int bits) {
  if (bits == 4)
    return {"qgemv_q4x16_avx2", "qgemm_q4x16_4x8_avx2", quantize_row_blocks_avx2, qgemv_q4x16_avx2<kAsym>,
            qgemm_q4x16_4x8_avx2<kAsym>};
  return {"qgemv_q8x16_avx2", "qgemm_q8x16_4x8_avx2", quantize_row_blocks_avx2, qgemv_q8x16_avx2<kAsym>,
          qgemm_q8x16_4x8_avx2<kAsym>};
}

template <bool kAsym>
X16Fp32Kernels avx2_fp32(int bits) {
  if (bits == 4)
    return {"fgemv_q4x16_avx2", "fgemm_q4x16_4x8_avx2", fgemv_q4x16_avx2<kAsym>, fgemm_q4x16_4x8_avx2<kAsym>};
  return {"fgemv_q8x16_avx2", "fgemm_q8x16_4x8_avx2", fgemv_q8x16_avx2<kAsym>, fgemm_q8x16_4x8_avx2<kAsym>};
}

std::unique_ptr<PackedMatMul> pack_avx2_int8(const QuantizedMatrix& w) {
  return make_x16_int8(w, w.zero_points != nullptr ? avx2_int8<true>(w.bits) : avx2_int8<false>(w.bits));
}

std::unique_ptr<PackedMatMul> pack_avx2_fp32(const QuantizedMatrix& w) {
  return make_x16_fp32(w, w.zero_points != nullptr ? avx2_fp32<true>(w.bits) : avx2_fp32<false>(w.bits));
}

}  // namespace

void register_x86_matmul_nbits(std::vector<MatMulNBitsKernel>& t) {
  // Most preferred first.
  t.push_back({"x16_avx2_int8", Compute::kInt8, avx2_ok, pack_avx2_int8});
  t.push_back({"x16_avx2_fp32", Compute::kFp32, avx2_ok, pack_avx2_fp32});
}

}  // namespace nbits::kernels
