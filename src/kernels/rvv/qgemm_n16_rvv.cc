// RVV 1.0 CompInt8 MatMulNBits on N16 panels (VLEN 256): 16 output columns per vector lane
// group; M=1 GEMV and a 4-row GEMM tile share one body (R rows reuse each unpacked weight).
// Block dot: int4 codes as unsigned nibbles times signed int8 activations, vwmaccsu into int16
// (16 k per flush: 16*127*15 fits), widened to int32; zero point via exact block sums:
// dot = sum(a*code) - zp*sum(a). Then acc += float(dot) * (sa*sb) in fp32. With fp16 scales
// (H) sb is widened from the packed fp16 by vfwcvt (exact), the rest is the same. lut4 panels:
// the nibbles index the weight's 16 codes (vrgather), which then multiply as int8 codes do.
#include <algorithm>

#include "kernels/rvv/n16_rvv.h"
#include "kernels/rvv/panel_scales.h"

#if defined(__riscv_v_intrinsic)
#include <riscv_vector.h>

namespace nbits::kernels::rvv {
namespace {

// Y[m0..m0+R) x panel columns. R = 1..4 rows of A (rows past R are never read); H: fp16 scales.
template <int R, bool H>
void qgemm_tile(const PackedPanel16& p, const int8_t* qa, const float* sa, const int32_t* qsum, int64_t m0,
                int64_t panel, float* Y, int64_t ldy, const float* bias) {
  const size_t vl = 16;
  const int bs = p.block;
  const int64_t row = p.k_blocks * bs;
  const int8_t* q[4];
  for (int r = 0; r < 4; ++r) q[r] = qa + (m0 + std::min(r, R - 1)) * row;
  vfloat32m2_t f0 = __riscv_vfmv_v_f_f32m2(0.0f, vl), f1 = f0, f2 = f0, f3 = f0;
  const vuint8mf2_t table = __riscv_vle8_v_u8mf2(p.lut, vl);  // lut4: the 16 codes
  for (int64_t b = 0; b < p.k_blocks; ++b) {
    const uint8_t* rec = p.record(panel, b);
    const uint8_t* codes = rec + p.codes_offset;
    const int8_t* q0 = q[0] + b * bs;
    const int8_t* q1 = q[1] + b * bs;
    const int8_t* q2 = q[2] + b * bs;
    const int8_t* q3 = q[3] + b * bs;
    vint32m2_t d0 = __riscv_vmv_v_x_i32m2(0, vl), d1 = d0, d2 = d0, d3 = d0;
    if (p.lut4) {
      // Per k pair one 16-byte load of indices; vrgather turns each nibble into its 8-bit code,
      // then as int8: widened unsigned, one vwmacc per row and k into int32.
      for (int k = 0; k < bs; k += 2, codes += 16) {
        const vuint8mf2_t v = __riscv_vle8_v_u8mf2(codes, vl);
        const vint16m1_t lo = __riscv_vreinterpret_v_u16m1_i16m1(__riscv_vzext_vf2_u16m1(
            __riscv_vrgather_vv_u8mf2(table, __riscv_vand_vx_u8mf2(v, 15, vl), vl), vl));
        const vint16m1_t hi = __riscv_vreinterpret_v_u16m1_i16m1(__riscv_vzext_vf2_u16m1(
            __riscv_vrgather_vv_u8mf2(table, __riscv_vsrl_vx_u8mf2(v, 4, vl), vl), vl));
        d0 = __riscv_vwmacc_vx_i32m2(__riscv_vwmacc_vx_i32m2(d0, q0[k], lo, vl), q0[k + 1], hi, vl);
        if constexpr (R > 1)
          d1 = __riscv_vwmacc_vx_i32m2(__riscv_vwmacc_vx_i32m2(d1, q1[k], lo, vl), q1[k + 1], hi, vl);
        if constexpr (R > 2)
          d2 = __riscv_vwmacc_vx_i32m2(__riscv_vwmacc_vx_i32m2(d2, q2[k], lo, vl), q2[k + 1], hi, vl);
        if constexpr (R > 3)
          d3 = __riscv_vwmacc_vx_i32m2(__riscv_vwmacc_vx_i32m2(d3, q3[k], lo, vl), q3[k + 1], hi, vl);
      }
    } else if (p.bits == 4) {
      for (int k0 = 0; k0 < bs; k0 += 16) {
        vint16m1_t s0 = __riscv_vmv_v_x_i16m1(0, vl), s1 = s0, s2 = s0, s3 = s0;
        for (int k = k0; k < k0 + 16; k += 2, codes += 16) {
          const vuint8mf2_t v = __riscv_vle8_v_u8mf2(codes, vl);
          const vuint8mf2_t lo = __riscv_vand_vx_u8mf2(v, 15, vl), hi = __riscv_vsrl_vx_u8mf2(v, 4, vl);
          s0 = __riscv_vwmaccsu_vx_i16m1(__riscv_vwmaccsu_vx_i16m1(s0, q0[k], lo, vl), q0[k + 1], hi, vl);
          if constexpr (R > 1)
            s1 = __riscv_vwmaccsu_vx_i16m1(__riscv_vwmaccsu_vx_i16m1(s1, q1[k], lo, vl), q1[k + 1], hi, vl);
          if constexpr (R > 2)
            s2 = __riscv_vwmaccsu_vx_i16m1(__riscv_vwmaccsu_vx_i16m1(s2, q2[k], lo, vl), q2[k + 1], hi, vl);
          if constexpr (R > 3)
            s3 = __riscv_vwmaccsu_vx_i16m1(__riscv_vwmaccsu_vx_i16m1(s3, q3[k], lo, vl), q3[k + 1], hi, vl);
        }
        d0 = __riscv_vwadd_wv_i32m2(d0, s0, vl);
        if constexpr (R > 1) d1 = __riscv_vwadd_wv_i32m2(d1, s1, vl);
        if constexpr (R > 2) d2 = __riscv_vwadd_wv_i32m2(d2, s2, vl);
        if constexpr (R > 3) d3 = __riscv_vwadd_wv_i32m2(d3, s3, vl);
      }
    } else {
      for (int k = 0; k < bs; ++k, codes += 16) {
        const vint16m1_t v =
            __riscv_vreinterpret_v_u16m1_i16m1(__riscv_vzext_vf2_u16m1(__riscv_vle8_v_u8mf2(codes, vl), vl));
        d0 = __riscv_vwmacc_vx_i32m2(d0, q0[k], v, vl);
        if constexpr (R > 1) d1 = __riscv_vwmacc_vx_i32m2(d1, q1[k], v, vl);
        if constexpr (R > 2) d2 = __riscv_vwmacc_vx_i32m2(d2, q2[k], v, vl);
        if constexpr (R > 3) d3 = __riscv_vwmacc_vx_i32m2(d3, q3[k], v, vl);
      }
    }
    // Epilogue: exact zero-point correction, then fp32 scale and accumulate.
    const vfloat32m2_t sb = load_scales16<H>(rec);
    const vint32m2_t zp = p.has_zp ? load_zp16(rec + p.zp_offset) : __riscv_vmv_v_x_i32m2(p.default_zp(), vl);
    auto finish = [&](vfloat32m2_t f, vint32m2_t d, int r) {
      const int64_t ab = (m0 + r) * p.k_blocks + b;
      d = __riscv_vnmsac_vx_i32m2(d, qsum[ab], zp, vl);
      return __riscv_vfmacc_vv_f32m2(f, __riscv_vfcvt_f_x_v_f32m2(d, vl),
                                     __riscv_vfmul_vf_f32m2(sb, sa[ab], vl), vl);
    };
    f0 = finish(f0, d0, 0);
    if constexpr (R > 1) f1 = finish(f1, d1, 1);
    if constexpr (R > 2) f2 = finish(f2, d2, 2);
    if constexpr (R > 3) f3 = finish(f3, d3, 3);
  }
  const int64_t n0 = panel * 16;
  store_rows16<R>(f0, f1, f2, f3, Y, ldy, m0, n0, static_cast<size_t>(std::min<int64_t>(16, p.N - n0)), bias);
}

}  // namespace

template <bool H>
void qgemv_n16_rvv(const PackedPanel16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
                   const int32_t* qsum, float* y, const float* bias) {
  for (int64_t panel = p0; panel < p1; ++panel) qgemm_tile<1, H>(w, qa, sa, qsum, 0, panel, y, w.N, bias);
}

template <bool H>
void qgemm_n16_rvv(const PackedPanel16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,
                   const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  for (int64_t panel = p0; panel < p1; ++panel)
    over_row_tiles(M, [&](auto r, int64_t m) {
      using R = decltype(r);
      qgemm_tile<R::value, H>(w, qa, sa, qsum, m, panel, Y, ldy, bias);
    });
}

#define NBITS_N16_INT8(H)                                                                             \
  template void qgemv_n16_rvv<H>(const PackedPanel16&, int64_t, int64_t, const int8_t*, const float*, \
                                 const int32_t*, float*, const float*);                               \
  template void qgemm_n16_rvv<H>(const PackedPanel16&, int64_t, int64_t, int64_t, const int8_t*,      \
                                 const float*, const int32_t*, float*, int64_t, const float*);
NBITS_N16_INT8(false)
NBITS_N16_INT8(true)
#undef NBITS_N16_INT8

}  // namespace nbits::kernels::rvv

#endif
