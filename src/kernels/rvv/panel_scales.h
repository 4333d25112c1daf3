// Shared by the RISC-V packers and kernels (n16 RVV and x16 IME): the per-(panel, block)
// header of 16 scales, stored as fp32 (64 bytes) or IEEE fp16 (32 bytes, PackOptions::fp16_scales
// when quant::scales_fit_fp16), then 16 uint8 zero points (only with zero points).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>

#include "base/fp16.h"
#include "kernels/matmul_nbits.h"

#if defined(__riscv_v_intrinsic)
#include <riscv_vector.h>
#endif

namespace nbits::kernels::rvv {

// Bytes of the 16 scales of a block header.
constexpr size_t scale_bytes(bool fp16) { return fp16 ? 32 : 64; }

// Writes scale s of column c (0..15) into a block header.
inline void store_scale(uint8_t* header, int c, float s, bool fp16) {
  if (fp16) {
    const uint16_t h = float_to_fp16(s);
    std::memcpy(header + 2 * c, &h, 2);
  } else {
    std::memcpy(header + 4 * c, &s, 4);
  }
}

// Calls options.rows_consumed as packing finishes panel `panel` (16 source rows each), every
// 256 rows and at the end.
inline void report_rows(const PackOptions& options, int64_t panel, int64_t N) {
  if (!options.rows_consumed) return;
  const int64_t done = (panel + 1) * 16;
  if (done >= N)
    options.rows_consumed(N);
  else if (done % 256 == 0)
    options.rows_consumed(done);
}

#if defined(__riscv_v_intrinsic)
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
#endif

}  // namespace nbits::kernels::rvv
