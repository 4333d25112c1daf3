// Registers the RISC-V MatMulNBits kernel sets (RVV 1.0, SpacemiT IME).
#pragma once

#include <vector>

#include "kernels/matmul_nbits.h"

namespace nbits::kernels {
void register_rvv_matmul_nbits(std::vector<MatMulNBitsKernel>& table);
}
