#include "kernels/rvv/register_rvv.h"

#include "kernels/ime/pack_x16.h"
#include "kernels/rvv/pack_n16.h"

namespace nbits::kernels {

void register_rvv_matmul_nbits(std::vector<MatMulNBitsKernel>& table) {
  // Most preferred first: IME (cores that passed the vmadot probe), then plain RVV.
  // Each honours PackOptions (fp16 scales, rows_consumed) through pack_with.
  table.push_back({"x16_ime_int8", Compute::kInt8, ime::ime_x16_supports, ime::make_qgemm_x16_ime,
                   ime::make_qgemm_x16_ime_opts});
  table.push_back({"n16_rvv_int8", Compute::kInt8, rvv::rvv_n16_supports, rvv::make_qgemm_n16_rvv,
                   rvv::make_qgemm_n16_rvv_opts});
  table.push_back({"n16_rvv_fp32", Compute::kFp32, rvv::rvv_n16_supports, rvv::make_gemm_n16_fp32_rvv,
                   rvv::make_gemm_n16_fp32_rvv_opts});
}

}  // namespace nbits::kernels
