// The RVV 1.0 micro-kernels on n16 panels (quant/packed_panel16.h, VLEN 256), run by the panel
// driver (kernels/panel_matmul.h). H: the panel's scales are fp16. Declarations and the shared
// row loop; built only with the V extension (__riscv_v_intrinsic).
#pragma once

#include <cstdint>
#include <type_traits>

#include "quant/packed_panel16.h"

namespace nbits::kernels::rvv {

using quant::PackedPanel16;

// CompInt8 (PanelInt8Kernels): M = 1 and M rows in tiles of 4.
template <bool H>
void qgemv_n16_rvv(const PackedPanel16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
                   const int32_t* qsum, float* y, const float* bias);
template <bool H>
void qgemm_n16_rvv(const PackedPanel16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,
                   const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias);

// CompFp32 (PanelFp32Kernels).
template <bool H>
void fgemv_n16_rvv(const PackedPanel16& w, int64_t p0, int64_t p1, const float* a, const float* asum,
                   float* y, const float* bias);
template <bool H>
void fgemm_n16_rvv(const PackedPanel16& w, int64_t p0, int64_t p1, int64_t M, const float* A, int64_t lda,
                   float* Y, int64_t ldy, const float* bias);

// Runs tile(std::integral_constant<int, R>, m0) over M rows in tiles of R = 4 rows, then one of
// 1..3 rows (the shared row loop of the 4-row n16 kernels).
template <typename F>
inline void over_row_tiles(int64_t M, F&& tile) {
  int64_t m = 0;
  for (; m + 4 <= M; m += 4) tile(std::integral_constant<int, 4>{}, m);
  switch (M - m) {
    case 3:
      tile(std::integral_constant<int, 3>{}, m);
      break;
    case 2:
      tile(std::integral_constant<int, 2>{}, m);
      break;
    case 1:
      tile(std::integral_constant<int, 1>{}, m);
      break;
    default:
      break;
  }
}

}  // namespace nbits::kernels::rvv
