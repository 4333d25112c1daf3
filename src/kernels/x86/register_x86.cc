#include "kernels/x86/register_x86.h"

namespace nbits::kernels {

void register_x86_matmul_nbits(std::vector<MatMulNBitsKernel>& /*table*/) {
  // Fast x86 kernel sets are registered here, most preferred first.
}

}  // namespace nbits::kernels
