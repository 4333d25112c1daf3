// Shared by the RISC-V micro-kernels (n16 RVV and t16 IME, quant/packed_panel16.h): loads of the
// per-(panel, block) header of 16 scales (fp32, or IEEE fp16 when the panel's scales_fp16) and
// 16 uint8 zero points.
#pragma once

#include <cstdint>

#if defined(__riscv_v_intrinsic)
#include <riscv_vector.h>

namespace nbits::kernels::rvv {

// The 16 scales of a block header as fp32 lanes (H: stored as fp16, widened exactly by
// vfwcvt.f.f.v; Zvfh, which QEMU 7.2 runs with Zfh=true).
template <bool H>
inline vfloat32m2_t load_scales16(const uint8_t* header) {
  if constexpr (H) {
    return __riscv_vfwcvt_f_f_v_f32m2(__riscv_vle16_v_f16m1(reinterpret_cast<const _Float16*>(header), 16),
                                      16);
  } else {
    return __riscv_vle32_v_f32m2(reinterpret_cast<const float*>(header), 16);
  }
}

// The 16 uint8 zero points at `zp` as int32 lanes.
inline vint32m2_t load_zp16(const uint8_t* zp) {
  return __riscv_vreinterpret_v_u32m2_i32m2(__riscv_vzext_vf4_u32m2(__riscv_vle8_v_u8mf2(zp, 16), 16));
}

// Stores rows m0..m0+R of one panel's 16 columns from up to 4 accumulators, plus the bias:
// Y[(m0 + r) * ldy + n0 + j] = f_r[j] (+ bias[n0 + j]) for j < vn (columns past N cut).
template <int R>
inline void store_rows16(vfloat32m2_t f0, vfloat32m2_t f1, vfloat32m2_t f2, vfloat32m2_t f3, float* Y,
                         int64_t ldy, int64_t m0, int64_t n0, size_t vn, const float* bias) {
  auto store = [&](vfloat32m2_t f, int r) {
    if (bias != nullptr) f = __riscv_vfadd_vv_f32m2(f, __riscv_vle32_v_f32m2(bias + n0, vn), vn);
    __riscv_vse32_v_f32m2(Y + (m0 + r) * ldy + n0, f, vn);
  };
  store(f0, 0);
  if constexpr (R > 1) store(f1, 1);
  if constexpr (R > 2) store(f2, 2);
  if constexpr (R > 3) store(f3, 3);
}

}  // namespace nbits::kernels::rvv

#endif
