// Registers the arm64 MatMulNBits kernel sets (NEON, dotprod, i8mm), each behind its HWCAP bit.
#pragma once

#include <vector>

#include "kernels/matmul_nbits.h"

namespace nbits::kernels {
void register_arm64_matmul_nbits(std::vector<MatMulNBitsKernel>& table);
}
