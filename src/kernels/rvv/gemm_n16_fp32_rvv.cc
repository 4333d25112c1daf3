// RVV 1.0 CompFp32 MatMulNBits on N16 panels: each k's 16 weights are dequantized once,
// w = (float(code) - zp) * scale (the reference's order), then FMA'd into up to 4 rows.
// With fp16 scales (H) the scale is widened from the packed fp16 (exact), the rest is the same.
#include <algorithm>
#include <utility>

#include "kernels/rvv/pack_n16.h"
#include "kernels/rvv/panel_scales.h"

#if defined(__riscv_v_intrinsic)
#include <riscv_vector.h>

namespace nbits::kernels::rvv {
namespace {

template <int R, bool H>
void gemm_tile(const PackN16& p, const float* A, int64_t m0, int64_t panel, float* Y, const float* bias) {
  const size_t vl = 16;
  const float* a[4];
  for (int r = 0; r < 4; ++r) a[r] = A + (m0 + std::min(r, R - 1)) * p.K;
  vfloat32m2_t f0 = __riscv_vfmv_v_f_f32m2(0.0f, vl), f1 = f0, f2 = f0, f3 = f0;
  auto fma = [&](vfloat32m2_t w, int64_t k) {
    f0 = __riscv_vfmacc_vf_f32m2(f0, a[0][k], w, vl);
    if constexpr (R > 1) f1 = __riscv_vfmacc_vf_f32m2(f1, a[1][k], w, vl);
    if constexpr (R > 2) f2 = __riscv_vfmacc_vf_f32m2(f2, a[2][k], w, vl);
    if constexpr (R > 3) f3 = __riscv_vfmacc_vf_f32m2(f3, a[3][k], w, vl);
  };
  for (int64_t b = 0; b < p.kb; ++b) {
    const uint8_t* rec = p.block(panel, b);
    const uint8_t* codes = rec + p.codes_offset;
    const vfloat32m2_t sb = load_scales16<H>(rec);
    vfloat32m2_t zp = __riscv_vfmv_v_f_f32m2(static_cast<float>(p.zero_default()), vl);
    if (p.has_zp)
      zp = __riscv_vfcvt_f_xu_v_f32m2(
          __riscv_vzext_vf4_u32m2(__riscv_vle8_v_u8mf2(rec + p.zp_offset, vl), vl), vl);
    auto dq = [&](vuint32m2_t c) {  // codes widened to 32 bits: every op at e32, no vtype switches
      const vfloat32m2_t x = __riscv_vfcvt_f_xu_v_f32m2(c, vl);
      return __riscv_vfmul_vv_f32m2(__riscv_vfsub_vv_f32m2(x, zp, vl), sb, vl);
    };
    auto widen = [&](const uint8_t* c) { return __riscv_vzext_vf4_u32m2(__riscv_vle8_v_u8mf2(c, vl), vl); };
    const int64_t kbeg = b * p.bs, kend = std::min<int64_t>(p.K, kbeg + p.bs);
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
  const size_t vn = static_cast<size_t>(std::min<int64_t>(16, p.N - n0));
  auto store = [&](vfloat32m2_t f, int r) {
    if (bias != nullptr) f = __riscv_vfadd_vv_f32m2(f, __riscv_vle32_v_f32m2(bias + n0, vn), vn);
    __riscv_vse32_v_f32m2(Y + (m0 + r) * p.N + n0, f, vn);
  };
  store(f0, 0);
  if constexpr (R > 1) store(f1, 1);
  if constexpr (R > 2) store(f2, 2);
  if constexpr (R > 3) store(f3, 3);
}

template <bool H>
class GemmN16Fp32Rvv final : public PackedMatMul {
 public:
  explicit GemmN16Fp32Rvv(PackN16 p) : p_(std::move(p)) {}

  void run(const float* A, int64_t M, float* Y, const float* bias, ThreadPool& pool) const override {
    pool.parallel_range(p_.panels, 1, [&](int64_t pb, int64_t pe) {
      for (int64_t panel = pb; panel < pe; ++panel) {
        int64_t m = 0;
        for (; m + 4 <= M; m += 4) gemm_tile<4, H>(p_, A, m, panel, Y, bias);
        switch (M - m) {
          case 3:
            gemm_tile<3, H>(p_, A, m, panel, Y, bias);
            break;
          case 2:
            gemm_tile<2, H>(p_, A, m, panel, Y, bias);
            break;
          case 1:
            gemm_tile<1, H>(p_, A, m, panel, Y, bias);
            break;
          default:
            break;
        }
      }
    });
  }
  const char* kernel_name(int64_t M) const override {
    if constexpr (H) {
      if (p_.bits == 4) return M == 1 ? "gemv_q4n16h_fp32_rvv" : "gemm_q4n16h_4x16_fp32_rvv";
      return M == 1 ? "gemv_q8n16h_fp32_rvv" : "gemm_q8n16h_4x16_fp32_rvv";
    }
    if (p_.bits == 4) return M == 1 ? "gemv_q4n16_fp32_rvv" : "gemm_q4n16_4x16_fp32_rvv";
    return M == 1 ? "gemv_q8n16_fp32_rvv" : "gemm_q8n16_4x16_fp32_rvv";
  }
  size_t packed_bytes() const override { return p_.data.size(); }

 private:
  PackN16 p_;
};

}  // namespace

std::unique_ptr<PackedMatMul> make_gemm_n16_fp32_rvv_opts(const QuantizedMatrix& w,
                                                          const PackOptions& options) {
  PackN16 p = pack_n16(w, options);
  if (p.scales_fp16) return std::make_unique<GemmN16Fp32Rvv<true>>(std::move(p));
  return std::make_unique<GemmN16Fp32Rvv<false>>(std::move(p));
}

std::unique_ptr<PackedMatMul> make_gemm_n16_fp32_rvv(const QuantizedMatrix& w) {
  return make_gemm_n16_fp32_rvv_opts(w, PackOptions{});
}

}  // namespace nbits::kernels::rvv

#else
namespace nbits::kernels::rvv {
std::unique_ptr<PackedMatMul> make_gemm_n16_fp32_rvv(const QuantizedMatrix&) { return nullptr; }
std::unique_ptr<PackedMatMul> make_gemm_n16_fp32_rvv_opts(const QuantizedMatrix&, const PackOptions&) {
  return nullptr;
}
}  // namespace nbits::kernels::rvv
#endif
