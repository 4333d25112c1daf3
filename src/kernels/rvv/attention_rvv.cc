// The flash-attention tile and the decode kernel on RVV 1.0 with 256-bit vectors (the K1's X60):
// 8 query rows (tile) or 8 keys (decode) per vector, as on AVX2, with the register blocks sized
// for RVV's 32 vector registers. fp16 caches are widened with Zvfh, int8 ones sign-extended.
// Compiled with -mrvv-vector-bits=zvl (cmake/room_riscv.cmake), so the vector types are sized and
// live in the kernels' arrays; every operation runs at vl = 8 (LMUL 1 at VLEN 256).
#include "kernels/rvv/attention_rvv.h"

#if defined(__riscv_v_intrinsic) && defined(__riscv_v_fixed_vlen) && __riscv_v_fixed_vlen == 256
#include <riscv_vector.h>

#include "base/fp16.h"

namespace nbits::kernels {
namespace {

typedef vfloat32m1_t VF __attribute__((riscv_rvv_vector_bits(256)));
constexpr size_t kVl = 8;

// exp of 8 floats, the Cephes expf steps of kernels/x86/exp_avx2.h (x = n ln2 + r, |r| <= ln2/2,
// degree-5 polynomial in Estrin form, 2^n as two factors so subnormal results are kept), ~1 ulp;
// x > 88.73 -> +inf, x < -104 -> 0. RVV's vfmin/vfmax return the number for a NaN operand, so NaN
// lanes are put back at the end.
inline VF exp8(VF x0) {
  const VF x = __riscv_vfmax_vf_f32m1(__riscv_vfmin_vf_f32m1(x0, 89.0f, kVl), -110.0f, kVl);
  // vfcvt.x.f.v rounds with frm: to nearest, ties to even (as _mm256_round_ps / cvtps_epi32).
  const vint32m1_t ni = __riscv_vfcvt_x_f_v_i32m1(__riscv_vfmul_vf_f32m1(x, 1.44269504088896341f, kVl), kVl);
  const VF n = __riscv_vfcvt_f_x_v_f32m1(ni, kVl);
  VF r = __riscv_vfnmsac_vf_f32m1(x, 0.693359375f, n, kVl);
  r = __riscv_vfnmsac_vf_f32m1(r, -2.12194440e-4f, n, kVl);
  const VF r2 = __riscv_vfmul_vv_f32m1(r, r, kVl);
  const VF a =
      __riscv_vfmacc_vf_f32m1(__riscv_vfmv_v_f_f32m1(5.0000001201e-1f, kVl), 1.6666665459e-1f, r, kVl);
  const VF b =
      __riscv_vfmacc_vf_f32m1(__riscv_vfmv_v_f_f32m1(4.1665795894e-2f, kVl), 8.3334519073e-3f, r, kVl);
  const VF c =
      __riscv_vfmacc_vf_f32m1(__riscv_vfmv_v_f_f32m1(1.3981999507e-3f, kVl), 1.9875691500e-4f, r, kVl);
  const VF p = __riscv_vfmadd_vv_f32m1(__riscv_vfmadd_vv_f32m1(c, r2, b, kVl), r2, a, kVl);
  const VF e = __riscv_vfadd_vf_f32m1(__riscv_vfmadd_vv_f32m1(p, r2, r, kVl), 1.0f, kVl);
  const vint32m1_t n1 = __riscv_vsra_vx_i32m1(ni, 1, kVl);
  const vint32m1_t n2 = __riscv_vsub_vv_i32m1(ni, n1, kVl);
  const VF s1 =
      __riscv_vreinterpret_v_i32m1_f32m1(__riscv_vsll_vx_i32m1(__riscv_vadd_vx_i32m1(n1, 127, kVl), 23, kVl));
  const VF s2 =
      __riscv_vreinterpret_v_i32m1_f32m1(__riscv_vsll_vx_i32m1(__riscv_vadd_vx_i32m1(n2, 127, kVl), 23, kVl));
  const VF y = __riscv_vfmul_vv_f32m1(__riscv_vfmul_vv_f32m1(e, s1, kVl), s2, kVl);
  return __riscv_vmerge_vvm_f32m1(y, x0, __riscv_vmfne_vv_f32m1_b32(x0, x0, kVl), kVl);
}

struct Rvv {
  using R = VF;
  // 32 vector registers: twice AVX2's register blocks (16 accumulators, 8 decode heads).
  static constexpr int kLanes = 8, kAcc = 16;
  static R zero() { return __riscv_vfmv_v_f_f32m1(0.0f, kVl); }
  static R set1(float x) { return __riscv_vfmv_v_f_f32m1(x, kVl); }
  static R load(const float* p) { return __riscv_vle32_v_f32m1(p, kVl); }
  static void store(float* p, R x) { __riscv_vse32_v_f32m1(p, x, kVl); }
  static R fmadd(R a, R b, R c) { return __riscv_vfmacc_vv_f32m1(c, a, b, kVl); }
  static R add(R a, R b) { return __riscv_vfadd_vv_f32m1(a, b, kVl); }
  static R sub(R a, R b) { return __riscv_vfsub_vv_f32m1(a, b, kVl); }
  static R mul(R a, R b) { return __riscv_vfmul_vv_f32m1(a, b, kVl); }
  static R max(R a, R b) { return __riscv_vfmax_vv_f32m1(a, b, kVl); }
  static R div(R a, R b) { return __riscv_vfdiv_vv_f32m1(a, b, kVl); }
  static R exp(R x) { return exp8(x); }
  static R lt_select(R a, R b, R x, R y) {
    return __riscv_vmerge_vvm_f32m1(y, x, __riscv_vmflt_vv_f32m1_b32(a, b, kVl), kVl);
  }
  static void widen(const uint16_t* h, float* f, int64_t n) {
    for (int64_t i = 0; i < n;) {
      const size_t vl = __riscv_vsetvl_e16mf2(static_cast<size_t>(n - i));
      const vfloat16mf2_t x = __riscv_vreinterpret_v_u16mf2_f16mf2(__riscv_vle16_v_u16mf2(h + i, vl));
      __riscv_vse32_v_f32m1(f + i, __riscv_vfwcvt_f_f_v_f32m1(x, vl), vl);
      i += static_cast<int64_t>(vl);
    }
  }
  // int8 cache rows (kernels/attention.h): code * scale, 8 codes sign-extended per step.
  static void widen_q8(const int8_t* rows, float* f, int64_t nrows, int64_t H) {
    attn::widen_q8_rows<8>(rows, f, nrows, H, [](const int8_t* c, float scale, float* out) {
      const vint32m1_t w = __riscv_vsext_vf4_i32m1(__riscv_vle8_v_i8mf4(c, kVl), kVl);
      __riscv_vse32_v_f32m1(out, __riscv_vfmul_vf_f32m1(__riscv_vfcvt_f_x_v_f32m1(w, kVl), scale, kVl), kVl);
    });
  }
  // The decode kernel's (kernels/attention_decode_inl.h): 8 heads x 2 column vectors of
  // accumulators; q in registers up to 16 vectors (heads up to 128).
  static constexpr int kDecodeHeads = 8, kDecodeQRegs = 16;
  static R load_partial(const float* p, int n) {
    return __riscv_vle32_v_f32m1_tu(zero(), p, static_cast<size_t>(n));
  }
  static void store_partial(float* p, R x, int n) { __riscv_vse32_v_f32m1(p, x, static_cast<size_t>(n)); }
  // fold4: lane j (< 4) = the sum of a[j]'s lanes (one reduction each, slid up into lane j; the
  // lanes above it are rewritten by the next slides or unused, so every step keeps vl = 8 and no
  // vsetvli is needed between them); fold_groups: group g's four sums to lanes 4g..4g+3.
  static R fold4(const R* a) {
    const R z = zero();
    R r = __riscv_vfredusum_vs_f32m1_f32m1(a[0], z, kVl);
    for (int j = 1; j < 4; ++j)
      r = __riscv_vslideup_vx_f32m1(r, __riscv_vfredusum_vs_f32m1_f32m1(a[j], z, kVl), static_cast<size_t>(j),
                                    kVl);
    return r;
  }
  static R fold_groups(const R* z) { return __riscv_vslideup_vx_f32m1(z[0], z[1], 4, kVl); }
  static float hmax(R x) {
    return __riscv_vfmv_f_s_f32m1_f32(__riscv_vfredmax_vs_f32m1_f32m1(x, set1(-INFINITY), kVl));
  }
  static float hsum(R x) {
    return __riscv_vfmv_f_s_f32m1_f32(__riscv_vfredusum_vs_f32m1_f32m1(x, zero(), kVl));
  }
  static R iota() { return __riscv_vfcvt_f_xu_v_f32m1(__riscv_vid_v_u32m1(kVl), kVl); }
};

}  // namespace

bool attention_rvv_supported() { return __riscv_vsetvlmax_e8m1() == 32; }
attn::TileKernels attention_tile_rvv() { return attn::tile_kernels<Rvv>("rvv"); }
attn::DecodeKernels attention_decode_rvv() { return attn::decode_kernels<Rvv>(); }

}  // namespace nbits::kernels

#else  // built without fixed 256-bit RVV: never selected

namespace nbits::kernels {
bool attention_rvv_supported() { return false; }
attn::TileKernels attention_tile_rvv() { return {}; }
attn::DecodeKernels attention_decode_rvv() { return {}; }
}  // namespace nbits::kernels

#endif
