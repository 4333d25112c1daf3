// RVV 1.0 CompFp32 MatMulNBits on N16 panels: each k's 16 weights are dequantized once,
// w = (float(code) - zp) * scale (the reference's order), then FMA'd into up to 4 rows.
// With fp16 scales (H) the scale is widened from the packed fp16 (exact), the rest is the same.
#include <algorithm>

#include "kernels/rvv/n16_rvv.h"
#include "kernels/rvv/panel_scales.h"

#if defined(__riscv_v_intrinsic)
#include <riscv_vector.h>

namespace nbits::kernels::rvv {
namespace {

template <int R, bool H>
void gemm_tile(const PackedPanel16& p, const float* A, int64_t lda, int64_t m0, int64_t panel, float* Y,
               int64_t ldy, const float* bias) {
  const size_t vl = 16;
  const float* a[4];
  for (int r = 0; r < 4; ++r) a[r] = A + (m0 + std::min(r, R - 1)) * lda;
  vfloat32m2_t f0 = __riscv_vfmv_v_f_f32m2(0.0f, vl), f1 = f0, f2 = f0, f3 = f0;
  auto fma = [&](vfloat32m2_t w, int64_t k) {
    f0 = __riscv_vfmacc_vf_f32m2(f0, a[0][k], w, vl);
    if constexpr (R > 1) f1 = __riscv_vfmacc_vf_f32m2(f1, a[1][k], w, vl);
    if constexpr (R > 2) f2 = __riscv_vfmacc_vf_f32m2(f2, a[2][k], w, vl);
    if constexpr (R > 3) f3 = __riscv_vfmacc_vf_f32m2(f3, a[3][k], w, vl);
  };
  for (int64_t b = 0; b < p.k_blocks; ++b) {
    const uint8_t* rec = p.record(panel, b);
    const uint8_t* codes = rec + p.codes_offset;
    const vfloat32m2_t sb = load_scales16<H>(rec);
    vfloat32m2_t zp = __riscv_vfmv_v_f_f32m2(static_cast<float>(p.default_zp()), vl);
    if (p.has_zp)
      zp = __riscv_vfcvt_f_xu_v_f32m2(
          __riscv_vzext_vf4_u32m2(__riscv_vle8_v_u8mf2(rec + p.zp_offset, vl), vl), vl);
    auto dq = [&](vuint32m2_t c) {  // codes widened to 32 bits: every op at e32, no vtype switches
      const vfloat32m2_t x = __riscv_vfcvt_f_xu_v_f32m2(c, vl);
      return __riscv_vfmul_vv_f32m2(__riscv_vfsub_vv_f32m2(x, zp, vl), sb, vl);
    };
    auto widen = [&](const uint8_t* c) { return __riscv_vzext_vf4_u32m2(__riscv_vle8_v_u8mf2(c, vl), vl); };
    const int64_t kbeg = b * p.block, kend = std::min<int64_t>(p.K, kbeg + p.block);
    if (p.bits == 4) {
      for (int64_t k = kbeg; k < kend; k += 2, codes += 16) {
        const vuint32m2_t v = __riscv_vzext_vf4_u32m2(__riscv_vle8_v_u8mf2(codes, vl), vl);
        fma(dq(__riscv_vand_vx_u32m2(v, 15, vl)), k);
        if (k + 1 < kend) fma(dq(__riscv_vsrl_vx_u32m2(v, 4, vl)), k + 1);
      }
    } else {
      int64_t k = kbeg;
      for (; k + 3 < kend; k += 4, codes += 64)  // 4 k per trip: a quarter of the loop overhead
        for (int i = 0; i < 4; ++i) fma(dq(widen(codes + 16 * i)), k + i);
      for (; k < kend; ++k, codes += 16) fma(dq(widen(codes)), k);
    }
  }
  const int64_t n0 = panel * 16;
  store_rows16<R>(f0, f1, f2, f3, Y, ldy, m0, n0, static_cast<size_t>(std::min<int64_t>(16, p.N - n0)), bias);
}

}  // namespace

template <bool H>
void fgemv_n16_rvv(const PackedPanel16& w, int64_t p0, int64_t p1, const float* a, const float* asum,
                   float* y, const float* bias) {
  for (int64_t panel = p0; panel < p1; ++panel) gemm_tile<1, H>(w, a, w.K, 0, panel, y, w.N, bias);
}

template <bool H>
void fgemm_n16_rvv(const PackedPanel16& w, int64_t p0, int64_t p1, int64_t M, const float* A, int64_t lda,
                   float* Y, int64_t ldy, const float* bias) {
  for (int64_t panel = p0; panel < p1; ++panel)
    over_row_tiles(M, [&](auto r, int64_t m) {
      using R = decltype(r);
      gemm_tile<R::value, H>(w, A, lda, m, panel, Y, ldy, bias);
    });
}

#define NBITS_N16_FP32(H)                                                                                    \
  template void fgemv_n16_rvv<H>(const PackedPanel16&, int64_t, int64_t, const float*, const float*, float*, \
                                 const float*);                                                              \
  template void fgemm_n16_rvv<H>(const PackedPanel16&, int64_t, int64_t, int64_t, const float*, int64_t,     \
                                 float*, int64_t, const float*);
NBITS_N16_FP32(false)
NBITS_N16_FP32(true)
#undef NBITS_N16_FP32

}  // namespace nbits::kernels::rvv

#endif
