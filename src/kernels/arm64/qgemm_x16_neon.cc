// CompInt8 x16 GEMV / GEMM for ARMv8.0 NEON without dotprod (Cortex-A53 / A72: Raspberry Pi 3/4):
// each SDOT by element becomes SMULL x2 + SADDLP x2 + ADDP + ADD. Bodies in qgemm_x16_inl.h.
#include "kernels/arm64/qgemm_x16_inl.h"

namespace nbits::kernels {
namespace {

struct Smull {
  template <int L>
  static int32x4_t lane(int32x4_t acc, int8x16_t w, int8x16_t a) {
    const int8x16_t b = vreinterpretq_s8_s32(vdupq_laneq_s32(vreinterpretq_s32_s8(a), L));
    const int16x8_t p0 = vmull_s8(vget_low_s8(w), vget_low_s8(b));  // |q * a| <= 128 * 127: int16
    const int16x8_t p1 = vmull_high_s8(w, b);
    return vaddq_s32(acc, vpaddq_s32(vpaddlq_s16(p0), vpaddlq_s16(p1)));
  }
};

}  // namespace

template <bool kAsym, bool kF16>
void qgemv_q4x16_neon(NBITS_A64_GEMV_ARGS) {
  arm64::qgemv_q4<Smull, kAsym, kF16>(w, p0, p1, qa, sa, qsum, y, bias);
}
template <bool kAsym, bool kF16>
void qgemv_q8x16_neon(NBITS_A64_GEMV_ARGS) {
  arm64::qgemv_q8<Smull, kAsym, kF16>(w, p0, p1, qa, sa, qsum, y, bias);
}
template <bool kAsym, bool kF16>
void qgemm_q4x16_4x8_neon(NBITS_A64_GEMM_ARGS) {
  arm64::qgemm_q4<Smull, kAsym, kF16>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
}
template <bool kAsym, bool kF16>
void qgemm_q8x16_4x8_neon(NBITS_A64_GEMM_ARGS) {
  arm64::qgemm_q8<Smull, kAsym, kF16>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
}

template <bool kF16>
void qgemv_q4lx16_neon(NBITS_A64_GEMV_ARGS) {
  arm64::qgemv_q4<Smull, false, kF16, arm64::Lut4>(w, p0, p1, qa, sa, qsum, y, bias);
}
template <bool kF16>
void qgemm_q4lx16_4x8_neon(NBITS_A64_GEMM_ARGS) {
  arm64::qgemm_q4<Smull, false, kF16, arm64::Lut4>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
}

NBITS_A64_INSTANTIATE(qgemv_q4x16_neon, NBITS_A64_GEMV_ARGS);
NBITS_A64_INSTANTIATE(qgemv_q8x16_neon, NBITS_A64_GEMV_ARGS);
NBITS_A64_INSTANTIATE(qgemm_q4x16_4x8_neon, NBITS_A64_GEMM_ARGS);
NBITS_A64_INSTANTIATE(qgemm_q8x16_4x8_neon, NBITS_A64_GEMM_ARGS);

NBITS_A64_INSTANTIATE_LUT4(qgemv_q4lx16_neon, NBITS_A64_GEMV_ARGS);
NBITS_A64_INSTANTIATE_LUT4(qgemm_q4lx16_4x8_neon, NBITS_A64_GEMM_ARGS);

}  // namespace nbits::kernels
