// Registers the x86 MatMulNBits kernel sets (AVX2, AVX-VNNI, AVX-512 VNNI).
#pragma once

#include <vector>

#include "kernels/matmul_nbits.h"

namespace nbits::kernels {
void register_x86_matmul_nbits(std::vector<MatMulNBitsKernel>& table);
}
