// CompInt8 x16 GEMV / GEMM with SDOT by element (ARMv8.2-A dotprod: Cortex-A76 / Raspberry Pi 5,
// Cortex-A55, Neoverse N1). Bodies in qgemm_x16_inl.h.
#include "kernels/arm64/qgemm_x16_inl.h"

namespace nbits::kernels {
namespace {

struct Sdot {
  template <int L>
  static int32x4_t lane(int32x4_t acc, int8x16_t w, int8x16_t a) {
    return vdotq_laneq_s32(acc, w, a, L);
  }
};

}  // namespace

template <bool kAsym, bool kF16>
void qgemv_q4x16_dotprod(NBITS_A64_GEMV_ARGS) {
  arm64::qgemv_q4<Sdot, kAsym, kF16>(w, p0, p1, qa, sa, qsum, y, bias);
}
template <bool kAsym, bool kF16>
void qgemv_q8x16_dotprod(NBITS_A64_GEMV_ARGS) {
  arm64::qgemv_q8<Sdot, kAsym, kF16>(w, p0, p1, qa, sa, qsum, y, bias);
}
template <bool kAsym, bool kF16>
void qgemm_q4x16_4x8_dotprod(NBITS_A64_GEMM_ARGS) {
  arm64::qgemm_q4<Sdot, kAsym, kF16>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
}
template <bool kAsym, bool kF16>
void qgemm_q8x16_4x8_dotprod(NBITS_A64_GEMM_ARGS) {
  arm64::qgemm_q8<Sdot, kAsym, kF16>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
}

template <bool kF16>
void qgemv_q4lx16_dotprod(NBITS_A64_GEMV_ARGS) {
  arm64::qgemv_q4<Sdot, false, kF16, arm64::Lut4>(w, p0, p1, qa, sa, qsum, y, bias);
}
template <bool kF16>
void qgemm_q4lx16_4x8_dotprod(NBITS_A64_GEMM_ARGS) {
  arm64::qgemm_q4<Sdot, false, kF16, arm64::Lut4>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
}

NBITS_A64_INSTANTIATE(qgemv_q4x16_dotprod, NBITS_A64_GEMV_ARGS);
NBITS_A64_INSTANTIATE(qgemv_q8x16_dotprod, NBITS_A64_GEMV_ARGS);
NBITS_A64_INSTANTIATE(qgemm_q4x16_4x8_dotprod, NBITS_A64_GEMM_ARGS);
NBITS_A64_INSTANTIATE(qgemm_q8x16_4x8_dotprod, NBITS_A64_GEMM_ARGS);

NBITS_A64_INSTANTIATE_LUT4(qgemv_q4lx16_dotprod, NBITS_A64_GEMV_ARGS);
NBITS_A64_INSTANTIATE_LUT4(qgemm_q4lx16_4x8_dotprod, NBITS_A64_GEMM_ARGS);

}  // namespace nbits::kernels
