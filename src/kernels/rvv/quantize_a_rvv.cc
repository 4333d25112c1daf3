#include "kernels/rvv/quantize_a_rvv.h"

#include <algorithm>
#include <cstring>

#include "quant/quantize_a.h"

#if defined(__riscv_v_intrinsic)
#include <riscv_vector.h>
#endif

namespace nbits::kernels::rvv {

void quantize_row_blocks_rvv(const float* a, int64_t K, int block, int8_t* qa, float* scales, int32_t* sums) {
#if defined(__riscv_v_intrinsic)
  const int64_t k_blocks = (K + block - 1) / block;
  for (int64_t b = 0; b < k_blocks; ++b) {
    const float* x = a + b * block;
    int8_t* q = qa + b * block;
    const int64_t n = std::min<int64_t>(block, K - b * block);
    vfloat32m1_t vmax = __riscv_vfmv_s_f_f32m1(0.0f, 1);
    for (int64_t i = 0; i < n;) {
      const size_t vl = __riscv_vsetvl_e32m8(static_cast<size_t>(n - i));
      vfloat32m8_t v = __riscv_vfabs_v_f32m8(__riscv_vle32_v_f32m8(x + i, vl), vl);
      vmax = __riscv_vfredmax_vs_f32m8_f32m1(v, vmax, vl);
      i += static_cast<int64_t>(vl);
    }
    const float amax = __riscv_vfmv_f_s_f32m1_f32(vmax);
    const float inv = amax != 0.0f ? 127.0f / amax : 0.0f;
    vint32m1_t vsum = __riscv_vmv_s_x_i32m1(0, 1);
    for (int64_t i = 0; i < n;) {
      const size_t vl = __riscv_vsetvl_e32m8(static_cast<size_t>(n - i));
      // vfcvt.x.f.v rounds with frm (round to nearest, ties to even), like nearbyint.
      vint32m8_t v =
          __riscv_vfcvt_x_f_v_i32m8(__riscv_vfmul_vf_f32m8(__riscv_vle32_v_f32m8(x + i, vl), inv, vl), vl);
      v = __riscv_vmin_vx_i32m8(__riscv_vmax_vx_i32m8(v, -127, vl), 127, vl);
      vsum = __riscv_vredsum_vs_i32m8_i32m1(v, vsum, vl);
      __riscv_vse8_v_i8m2(q + i, __riscv_vncvt_x_x_w_i8m2(__riscv_vncvt_x_x_w_i16m4(v, vl), vl), vl);
      i += static_cast<int64_t>(vl);
    }
    if (n < block) std::memset(q + n, 0, static_cast<size_t>(block - n));
    scales[b] = amax / 127.0f;
    sums[b] = __riscv_vmv_x_s_i32m1_i32(vsum);
  }
#else
  const int64_t k_blocks = (K + block - 1) / block;
  quant::quantize_row_blocks(a, K, block, qa, scales);
  for (int64_t b = 0; b < k_blocks; ++b) {
    int32_t s = 0;
    for (int j = 0; j < block; ++j) s += qa[b * block + j];
    sums[b] = s;
  }
#endif
}

}  // namespace nbits::kernels::rvv
