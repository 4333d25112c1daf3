#include "kernels/rvv/register_rvv.h"

namespace nbits::kernels {

void register_rvv_matmul_nbits(std::vector<MatMulNBitsKernel>& /*table*/) {
  // RVV / IME kernel sets are registered here, most preferred first.
}

}  // namespace nbits::kernels
