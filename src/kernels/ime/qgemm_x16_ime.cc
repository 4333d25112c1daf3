// SpacemiT IME CompInt8 MatMulNBits on x16 panels. Per 16 columns x (4 rows of A) x 8 k:
// one vmadotsu (A signed int8 tile x B unsigned codes tile). int4: one 32-byte load = 4 columns
// x 16 k as nibbles; vand/vsrl give the two B^T tiles. int8: one load = one tile.
// Block epilogue (exact): dot = acc - zp*sum(a); acc_f += float(dot) * (sa*sb) in fp32, on the
// 4x4 accumulator layout (lane 4i+j = row i, column j of the group).
// M=1 (decode) has its own epilogue (tile_x16_m1). H (template): the panel's scales are fp16,
// widened exactly by vfwcvt.f.f.v (Zvfh); zero points are uint8, widened in the epilogue.
#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/ime/ime_probe.h"
#include "kernels/ime/pack_x16.h"
#include "kernels/ime/vmadot.h"
#include "kernels/rvv/panel_scales.h"
#include "kernels/rvv/quantize_a_rvv.h"

#if defined(NBITS_HAVE_IME_KERNELS)

namespace nbits::kernels::ime {
namespace {

// Quantized activations in A-tile layout: per (row group g, block b) a record of
// bs/8 tiles of 32 B (4 rows x 8 k), then float sa_lanes[16], int32 sum_lanes[16].
struct ActTiles {
  std::vector<uint8_t> data;
  std::vector<int8_t> row;
  std::vector<float> sa;
  std::vector<int32_t> sum;
  size_t stride = 0;
  const uint8_t* rec(int64_t g, int64_t b, int64_t kb) const { return data.data() + (g * kb + b) * stride; }
};

template <typename T>
void grow(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

// Rows past M in the last group keep stale values: they only reach accumulator rows (and sa/sum
// lanes) that are never stored, so nothing is cleared per call and nothing allocated once grown.
void quantize_tiles(const PackX16& p, const float* A, int64_t M, ActTiles& t) {
  const int bs = p.bs;
  const int64_t groups = (M + 3) / 4;
  t.stride = static_cast<size_t>(bs) * 4 + 128;
  grow(t.data, static_cast<size_t>(groups * p.kb) * t.stride);
  grow(t.row, static_cast<size_t>(p.kb * bs));
  grow(t.sa, static_cast<size_t>(p.kb));
  grow(t.sum, static_cast<size_t>(p.kb));
  for (int64_t m = 0; m < M; ++m) {
    rvv::quantize_row_blocks_rvv(A + m * p.K, p.K, bs, t.row.data(), t.sa.data(), t.sum.data());
    const int64_t g = m / 4, i = m % 4;
    for (int64_t b = 0; b < p.kb; ++b) {
      uint8_t* rec = t.data.data() + (g * p.kb + b) * t.stride;
      for (int q = 0; q < bs / 8; ++q) std::memcpy(rec + q * 32 + i * 8, t.row.data() + b * bs + q * 8, 8);
      float* sa = reinterpret_cast<float*>(rec + bs * 4);
      int32_t* sum = reinterpret_cast<int32_t*>(rec + bs * 4 + 64);
      for (int j = 0; j < 4; ++j) {
        sa[4 * i + j] = t.sa[b];
        sum[4 * i + j] = t.sum[b];
      }
    }
  }
}

// One row group (rows m0..m0+rows, M >= 2) x one panel.
template <bool H>
void tile_x16(const PackX16& p, const ActTiles& t, int64_t g, int64_t panel, int64_t m0, int64_t rows,
              float* Y, const float* bias) {
  const int bs = p.bs;
  constexpr size_t EL = 16;
  // Accumulator lane 4i+j of group g is column 4g+j: gather indices of the 16 column-ordered lanes.
  const vuint32m2_t lane = __riscv_vand_vx_u32m2(__riscv_vid_v_u32m2(16), 3, 16);
  const vuint32m2_t idx0 = lane, idx1 = __riscv_vadd_vx_u32m2(lane, 4, EL),
                    idx2 = __riscv_vadd_vx_u32m2(lane, 8, EL), idx3 = __riscv_vadd_vx_u32m2(lane, 12, EL);
  vfloat32m2_t f0 = __riscv_vfmv_v_f_f32m2(0.0f, 16), f1 = f0, f2 = f0, f3 = f0;
  for (int64_t b = 0; b < p.kb; ++b) {
    const uint8_t* prec = p.block(panel, b);
    const uint8_t* codes = prec + p.codes_offset;
    const uint8_t* at = t.rec(g, b, p.kb);
    vint32m2_t c0 = __riscv_vmv_v_x_i32m2(0, 16), c1 = c0, c2 = c0, c3 = c0;
    if (p.bits == 4) {
      for (int k = 0; k < bs; k += 16, at += 64, codes += 128)
        vmadotsu_q4x16_step(c0, c1, c2, c3, __riscv_vle8_v_i8m1(reinterpret_cast<const int8_t*>(at), 32),
                            __riscv_vle8_v_i8m1(reinterpret_cast<const int8_t*>(at + 32), 32),
                            __riscv_vle8_v_u8m1(codes, 32), __riscv_vle8_v_u8m1(codes + 32, 32),
                            __riscv_vle8_v_u8m1(codes + 64, 32), __riscv_vle8_v_u8m1(codes + 96, 32));
    } else {
      for (int k = 0; k < bs; k += 8, at += 32, codes += 128)
        vmadotsu_q8x16_step(c0, c1, c2, c3, __riscv_vle8_v_i8m1(reinterpret_cast<const int8_t*>(at), 32),
                            __riscv_vle8_v_u8m1(codes, 32), __riscv_vle8_v_u8m1(codes + 32, 32),
                            __riscv_vle8_v_u8m1(codes + 64, 32), __riscv_vle8_v_u8m1(codes + 96, 32));
    }
    const uint8_t* arec = t.rec(g, b, p.kb) + bs * 4;
    const vfloat32m2_t sa = __riscv_vle32_v_f32m2(reinterpret_cast<const float*>(arec), EL);
    const vint32m2_t sum = __riscv_vle32_v_i32m2(reinterpret_cast<const int32_t*>(arec + 64), EL);
    const vfloat32m2_t sb16 = rvv::load_scales16<H>(prec);
    const vint32m2_t zp16 =
        p.has_zp ? rvv::load_zp16(prec + p.zp_offset) : __riscv_vmv_v_x_i32m2(p.zero_default(), EL);
    auto finish = [&](vfloat32m2_t f, vint32m2_t c, vuint32m2_t idx) {
      if (p.has_zp)
        c = __riscv_vnmsac_vv_i32m2(c, __riscv_vrgather_vv_i32m2(zp16, idx, EL), sum, EL);
      else
        c = __riscv_vnmsac_vx_i32m2(c, p.zero_default(), sum, EL);
      const vfloat32m2_t sb = __riscv_vrgather_vv_f32m2(sb16, idx, EL);
      return __riscv_vfmacc_vv_f32m2(f, __riscv_vfcvt_f_x_v_f32m2(c, EL), __riscv_vfmul_vv_f32m2(sa, sb, EL),
                                     EL);
    };
    f0 = finish(f0, c0, idx0);
    f1 = finish(f1, c1, idx1);
    f2 = finish(f2, c2, idx2);
    f3 = finish(f3, c3, idx3);
  }
  float out[4][16];
  __riscv_vse32_v_f32m2(out[0], f0, EL);
  __riscv_vse32_v_f32m2(out[1], f1, EL);
  __riscv_vse32_v_f32m2(out[2], f2, EL);
  __riscv_vse32_v_f32m2(out[3], f3, EL);
  for (int64_t i = 0; i < rows; ++i)
    for (int grp = 0; grp < 4; ++grp)
      for (int j = 0; j < 4; ++j) {
        const int64_t n = panel * 16 + grp * 4 + j;
        if (n < p.N) Y[(m0 + i) * p.N + n] = out[grp][4 * i + j] + (bias != nullptr ? bias[n] : 0.0f);
      }
}

// M=1 (decode): the same vmadot steps (rows 1-3 of the A tiles are zero), then row 0 of the four
// 4x4 accumulators is slid into one 16-lane vector (= the 16 columns in order) so the block
// epilogue is 4 vector ops for the whole panel and the result is stored directly.
template <bool H>
void tile_x16_m1(const PackX16& p, const ActTiles& t, int64_t panel, int64_t m, float* Y, const float* bias) {
  const int bs = p.bs;
  vfloat32m2_t f = __riscv_vfmv_v_f_f32m2(0.0f, 16);
  for (int64_t b = 0; b < p.kb; ++b) {
    const uint8_t* prec = p.block(panel, b);
    const uint8_t* codes = prec + p.codes_offset;
    const uint8_t* at = t.rec(0, b, p.kb);
    vint32m2_t c0 = __riscv_vmv_v_x_i32m2(0, 16), c1 = c0, c2 = c0, c3 = c0;
    if (p.bits == 4) {
      for (int k = 0; k < bs; k += 16, at += 64, codes += 128)
        vmadotsu_q4x16_step(c0, c1, c2, c3, __riscv_vle8_v_i8m1(reinterpret_cast<const int8_t*>(at), 32),
                            __riscv_vle8_v_i8m1(reinterpret_cast<const int8_t*>(at + 32), 32),
                            __riscv_vle8_v_u8m1(codes, 32), __riscv_vle8_v_u8m1(codes + 32, 32),
                            __riscv_vle8_v_u8m1(codes + 64, 32), __riscv_vle8_v_u8m1(codes + 96, 32));
    } else {
      for (int k = 0; k < bs; k += 8, at += 32, codes += 128)
        vmadotsu_q8x16_step(c0, c1, c2, c3, __riscv_vle8_v_i8m1(reinterpret_cast<const int8_t*>(at), 32),
                            __riscv_vle8_v_u8m1(codes, 32), __riscv_vle8_v_u8m1(codes + 32, 32),
                            __riscv_vle8_v_u8m1(codes + 64, 32), __riscv_vle8_v_u8m1(codes + 96, 32));
    }
    vint32m2_t c = __riscv_vslideup_vx_i32m2(c0, c1, 4, 8);
    c = __riscv_vslideup_vx_i32m2(c, c2, 8, 12);
    c = __riscv_vslideup_vx_i32m2(c, c3, 12, 16);
    const uint8_t* arec = t.rec(0, b, p.kb) + bs * 4;
    float sa;
    int32_t sum;
    std::memcpy(&sa, __builtin_assume_aligned(arec, 4), 4);  // records are 4-byte aligned
    std::memcpy(&sum, __builtin_assume_aligned(arec + 64, 4), 4);
    if (p.has_zp)
      c = __riscv_vnmsac_vx_i32m2(c, sum, rvv::load_zp16(prec + p.zp_offset), 16);
    else
      c = __riscv_vsub_vx_i32m2(c, p.zero_default() * sum, 16);
    const vfloat32m2_t sb = rvv::load_scales16<H>(prec);
    f = __riscv_vfmacc_vv_f32m2(f, __riscv_vfcvt_f_x_v_f32m2(c, 16), __riscv_vfmul_vf_f32m2(sb, sa, 16), 16);
  }
  const int64_t n0 = panel * 16;
  const size_t vn = static_cast<size_t>(std::min<int64_t>(16, p.N - n0));
  if (bias != nullptr) f = __riscv_vfadd_vv_f32m2(f, __riscv_vle32_v_f32m2(bias + n0, vn), vn);
  __riscv_vse32_v_f32m2(Y + m * p.N + n0, f, vn);
}

template <bool H>
class QgemmX16Ime final : public PackedMatMul {
 public:
  explicit QgemmX16Ime(PackX16 p) : p_(std::move(p)) {}

  void run(const float* A, int64_t M, float* Y, const float* bias, ThreadPool& pool) const override {
    // Per calling thread, shared by every matrix it runs: no allocation once grown to the largest M.
    thread_local ActTiles tiles;
    quantize_tiles(p_, A, M, tiles);
    const ActTiles& t = tiles;
    const int64_t groups = (M + 3) / 4;
    pool.parallel_range(p_.panels, 1, [&](int64_t pb, int64_t pe) {
      pin_thread_to_ime_cores();
      for (int64_t panel = pb; panel < pe; ++panel)  // panel-outer: the B panel stays in cache
        for (int64_t g = 0; g < groups; ++g) {
          const int64_t rows = std::min<int64_t>(4, M - 4 * g);
          if (M == 1)
            tile_x16_m1<H>(p_, t, panel, 0, Y, bias);
          else
            tile_x16<H>(p_, t, g, panel, 4 * g, rows, Y, bias);
        }
    });
  }
  const char* kernel_name(int64_t M) const override {
    if constexpr (H) {
      if (p_.bits == 4) return M == 1 ? "qgemv_q4x16h_ime" : "qgemm_q4x16h_4x16_ime";
      return M == 1 ? "qgemv_q8x16h_ime" : "qgemm_q8x16h_4x16_ime";
    }
    if (p_.bits == 4) return M == 1 ? "qgemv_q4x16_ime" : "qgemm_q4x16_4x16_ime";
    return M == 1 ? "qgemv_q8x16_ime" : "qgemm_q8x16_4x16_ime";
  }
  size_t packed_bytes() const override { return p_.data.size(); }

 private:
  PackX16 p_;
};

}  // namespace

std::unique_ptr<PackedMatMul> make_qgemm_x16_ime_opts(const QuantizedMatrix& w, const PackOptions& options) {
  PackX16 p = pack_x16(w, options);
  if (p.scales_fp16) return std::make_unique<QgemmX16Ime<true>>(std::move(p));
  return std::make_unique<QgemmX16Ime<false>>(std::move(p));
}

std::unique_ptr<PackedMatMul> make_qgemm_x16_ime(const QuantizedMatrix& w) {
  return make_qgemm_x16_ime_opts(w, PackOptions{});
}

}  // namespace nbits::kernels::ime

#else
namespace nbits::kernels::ime {
std::unique_ptr<PackedMatMul> make_qgemm_x16_ime(const QuantizedMatrix&) { return nullptr; }
std::unique_ptr<PackedMatMul> make_qgemm_x16_ime_opts(const QuantizedMatrix&, const PackOptions&) {
  return nullptr;
}
}  // namespace nbits::kernels::ime
#endif
