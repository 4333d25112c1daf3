// SpacemiT IME CompInt8 MatMulNBits on t16 panels (quant/packed_panel16.h). Per 16 columns x (4 rows of A) x
// 8 k: one vmadotsu (A signed int8 tile x B unsigned codes tile). int4: one 32-byte load = 4 columns x 16 k
// as nibbles; vand/vsrl give the two B^T tiles. int8: one load = one tile. Block epilogue (exact): dot = acc
// - zp*sum(a); acc_f += float(dot) * (sa*sb) in fp32, on the 4x4 accumulator layout (lane 4i+j = row i,
// column j of the group). M=1 (decode) reads the quantized row directly and has its own epilogue
// (tile_t16_m1). H (template): the panel's scales are fp16, widened exactly by vfwcvt.f.f.v (Zvfh); zero
// points are uint8, widened in the epilogue. lut4 panels: the nibbles become the weight's 8-bit codes by
// vrgather before the vmadots (zero point 128, as int8).
#include <algorithm>
#include <cstring>

#include "kernels/ime/ime_probe.h"
#include "kernels/ime/t16_ime.h"
#include "kernels/ime/vmadot.h"
#include "kernels/rvv/panel_scales.h"

#if defined(NBITS_HAVE_IME_KERNELS)

namespace nbits::kernels::ime {
namespace {

// A-tile record of (row group g, block b): block/8 tiles of 32 B, then sa_lanes[16], sum_lanes[16].
size_t tile_stride(const PackedPanel16& p) { return static_cast<size_t>(p.block) * 4 + 128; }
const uint8_t* tile_rec(const PackedPanel16& p, const uint8_t* tiles, int64_t g, int64_t b) {
  return tiles + static_cast<size_t>(g * p.k_blocks + b) * tile_stride(p);
}

// lut4 panels: the weight's 16 codes in lanes 0..15 (vrgather's table; lanes 16..31 unused).
vuint8m1_t lut_table(const PackedPanel16& p) {
  uint8_t t[32] = {};
  std::memcpy(t, p.lut, 16);
  return __riscv_vle8_v_u8m1(t, 32);
}

// One row group (rows m0..m0+rows, M >= 2) x one panel.
template <bool H>
void tile_t16(const PackedPanel16& p, const uint8_t* tiles, int64_t g, int64_t panel, int64_t m0,
              int64_t rows, float* Y, int64_t ldy, const float* bias) {
  const int bs = p.block;
  constexpr size_t EL = 16;
  // Accumulator lane 4i+j of group g is column 4g+j: gather indices of the 16 column-ordered lanes.
  const vuint32m2_t lane = __riscv_vand_vx_u32m2(__riscv_vid_v_u32m2(16), 3, 16);
  const vuint32m2_t idx0 = lane, idx1 = __riscv_vadd_vx_u32m2(lane, 4, EL),
                    idx2 = __riscv_vadd_vx_u32m2(lane, 8, EL), idx3 = __riscv_vadd_vx_u32m2(lane, 12, EL);
  vfloat32m2_t f0 = __riscv_vfmv_v_f_f32m2(0.0f, 16), f1 = f0, f2 = f0, f3 = f0;
  const vuint8m1_t table = lut_table(p);
  for (int64_t b = 0; b < p.k_blocks; ++b) {
    const uint8_t* prec = p.record(panel, b);
    const uint8_t* codes = prec + p.codes_offset;
    const uint8_t* at = tile_rec(p, tiles, g, b);
    vint32m2_t c0 = __riscv_vmv_v_x_i32m2(0, 16), c1 = c0, c2 = c0, c3 = c0;
    if (p.lut4) {
      for (int k = 0; k < bs; k += 16, at += 64, codes += 128)
        vmadotsu_q4lx16_step(c0, c1, c2, c3, __riscv_vle8_v_i8m1(reinterpret_cast<const int8_t*>(at), 32),
                             __riscv_vle8_v_i8m1(reinterpret_cast<const int8_t*>(at + 32), 32), table,
                             __riscv_vle8_v_u8m1(codes, 32), __riscv_vle8_v_u8m1(codes + 32, 32),
                             __riscv_vle8_v_u8m1(codes + 64, 32), __riscv_vle8_v_u8m1(codes + 96, 32));
    } else if (p.bits == 4) {
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
    const uint8_t* arec = tile_rec(p, tiles, g, b) + bs * 4;
    const vfloat32m2_t sa = __riscv_vle32_v_f32m2(reinterpret_cast<const float*>(arec), EL);
    const vint32m2_t sum = __riscv_vle32_v_i32m2(reinterpret_cast<const int32_t*>(arec + 64), EL);
    const vfloat32m2_t sb16 = rvv::load_scales16<H>(prec);
    const vint32m2_t zp16 =
        p.has_zp ? rvv::load_zp16(prec + p.zp_offset) : __riscv_vmv_v_x_i32m2(p.default_zp(), EL);
    auto finish = [&](vfloat32m2_t f, vint32m2_t c, vuint32m2_t idx) {
      if (p.has_zp)
        c = __riscv_vnmsac_vv_i32m2(c, __riscv_vrgather_vv_i32m2(zp16, idx, EL), sum, EL);
      else
        c = __riscv_vnmsac_vx_i32m2(c, p.default_zp(), sum, EL);
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
        if (n < p.N) Y[(m0 + i) * ldy + n] = out[grp][4 * i + j] + (bias != nullptr ? bias[n] : 0.0f);
      }
}

// M=1 (decode): the same vmadot steps with the A tiles loaded straight from the quantized row
// (rows 1-3 of such a tile are later k of the same row: they only reach accumulator rows 1-3,
// which are never read; the loads run up to 24 bytes past the row), then row 0 of the four
// 4x4 accumulators is slid into one 16-lane vector (= the 16 columns in order) so the block
// epilogue is 4 vector ops for the whole panel and the result is stored directly.
template <bool H>
void tile_t16_m1(const PackedPanel16& p, const int8_t* qa, const float* sa_row, const int32_t* qsum,
                 int64_t panel, float* y, const float* bias) {
  const int bs = p.block;
  vfloat32m2_t f = __riscv_vfmv_v_f_f32m2(0.0f, 16);
  const vuint8m1_t table = lut_table(p);
  for (int64_t b = 0; b < p.k_blocks; ++b) {
    const uint8_t* prec = p.record(panel, b);
    const uint8_t* codes = prec + p.codes_offset;
    const int8_t* a = qa + b * bs;
    vint32m2_t c0 = __riscv_vmv_v_x_i32m2(0, 16), c1 = c0, c2 = c0, c3 = c0;
    if (p.lut4) {
      for (int k = 0; k < bs; k += 16, codes += 128)
        vmadotsu_q4lx16_step(c0, c1, c2, c3, __riscv_vle8_v_i8m1(a + k, 32),
                             __riscv_vle8_v_i8m1(a + k + 8, 32), table, __riscv_vle8_v_u8m1(codes, 32),
                             __riscv_vle8_v_u8m1(codes + 32, 32), __riscv_vle8_v_u8m1(codes + 64, 32),
                             __riscv_vle8_v_u8m1(codes + 96, 32));
    } else if (p.bits == 4) {
      for (int k = 0; k < bs; k += 16, codes += 128)
        vmadotsu_q4x16_step(c0, c1, c2, c3, __riscv_vle8_v_i8m1(a + k, 32),
                            __riscv_vle8_v_i8m1(a + k + 8, 32), __riscv_vle8_v_u8m1(codes, 32),
                            __riscv_vle8_v_u8m1(codes + 32, 32), __riscv_vle8_v_u8m1(codes + 64, 32),
                            __riscv_vle8_v_u8m1(codes + 96, 32));
    } else {
      for (int k = 0; k < bs; k += 8, codes += 128)
        vmadotsu_q8x16_step(c0, c1, c2, c3, __riscv_vle8_v_i8m1(a + k, 32), __riscv_vle8_v_u8m1(codes, 32),
                            __riscv_vle8_v_u8m1(codes + 32, 32), __riscv_vle8_v_u8m1(codes + 64, 32),
                            __riscv_vle8_v_u8m1(codes + 96, 32));
    }
    vint32m2_t c = __riscv_vslideup_vx_i32m2(c0, c1, 4, 8);
    c = __riscv_vslideup_vx_i32m2(c, c2, 8, 12);
    c = __riscv_vslideup_vx_i32m2(c, c3, 12, 16);
    const float sa = sa_row[b];
    const int32_t sum = qsum[b];
    if (p.has_zp)
      c = __riscv_vnmsac_vx_i32m2(c, sum, rvv::load_zp16(prec + p.zp_offset), 16);
    else
      c = __riscv_vsub_vx_i32m2(c, p.default_zp() * sum, 16);
    const vfloat32m2_t sb = rvv::load_scales16<H>(prec);
    f = __riscv_vfmacc_vv_f32m2(f, __riscv_vfcvt_f_x_v_f32m2(c, 16), __riscv_vfmul_vf_f32m2(sb, sa, 16), 16);
  }
  const int64_t n0 = panel * 16;
  const size_t vn = static_cast<size_t>(std::min<int64_t>(16, p.N - n0));
  if (bias != nullptr) f = __riscv_vfadd_vv_f32m2(f, __riscv_vle32_v_f32m2(bias + n0, vn), vn);
  __riscv_vse32_v_f32m2(y + n0, f, vn);
}

}  // namespace

template <bool H>
void qgemv_t16_ime(const PackedPanel16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
                   const int32_t* qsum, float* y, const float* bias) {
  pin_thread_to_ime_cores();
  for (int64_t panel = p0; panel < p1; ++panel) tile_t16_m1<H>(w, qa, sa, qsum, panel, y, bias);
}

template <bool H>
void qgemm_t16_ime(const PackedPanel16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* tiles,
                   const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  pin_thread_to_ime_cores();
  const auto* t = reinterpret_cast<const uint8_t*>(tiles);
  const int64_t groups = (M + 3) / 4;
  for (int64_t panel = p0; panel < p1; ++panel)  // panel-outer: the B panel stays in cache
    for (int64_t g = 0; g < groups; ++g)
      tile_t16<H>(w, t, g, panel, 4 * g, std::min<int64_t>(4, M - 4 * g), Y, ldy, bias);
}

size_t tiles_bytes_t16(const PackedPanel16& w, int64_t M) {
  return static_cast<size_t>((M + 3) / 4 * w.k_blocks) * tile_stride(w);
}

// Rows past M in the last group keep stale values: they only reach accumulator rows (and sa/sum
// lanes) that are never stored, so nothing is cleared per call.
void tile_row_t16(const PackedPanel16& w, int64_t m, const int8_t* qa, const float* sa, const int32_t* qsum,
                  uint8_t* tiles) {
  const int bs = w.block;
  const int64_t g = m / 4, i = m % 4;
  for (int64_t b = 0; b < w.k_blocks; ++b) {
    uint8_t* rec = tiles + static_cast<size_t>(g * w.k_blocks + b) * tile_stride(w);
    for (int q = 0; q < bs / 8; ++q) std::memcpy(rec + q * 32 + i * 8, qa + b * bs + q * 8, 8);
    float* sa_lanes = reinterpret_cast<float*>(rec + bs * 4);
    int32_t* sum_lanes = reinterpret_cast<int32_t*>(rec + bs * 4 + 64);
    for (int j = 0; j < 4; ++j) {
      sa_lanes[4 * i + j] = sa[b];
      sum_lanes[4 * i + j] = qsum[b];
    }
  }
}

#define NBITS_T16_IME(H)                                                                              \
  template void qgemv_t16_ime<H>(const PackedPanel16&, int64_t, int64_t, const int8_t*, const float*, \
                                 const int32_t*, float*, const float*);                               \
  template void qgemm_t16_ime<H>(const PackedPanel16&, int64_t, int64_t, int64_t, const int8_t*,      \
                                 const float*, const int32_t*, float*, int64_t, const float*);
NBITS_T16_IME(false)
NBITS_T16_IME(true)
#undef NBITS_T16_IME

}  // namespace nbits::kernels::ime

#endif
