// The flash-attention tile and the decode kernel on baseline ARMv8-A NEON: a lane-for-lane port of
// the AVX2 traits of kernels/x86/attention_avx2.cc (an 8-float vector as two float32x4,
// kernels/arm64/v8_neon_inl.h), the same register blocks, horizontal adds (hadd = vpaddq per half)
// and fused operations, so on the same inputs they return the AVX2 kernels' bits.
#include "kernels/arm64/attention_neon.h"

#include <arm_neon.h>

#include "base/fp16.h"
#include "kernels/arm64/v8_neon_inl.h"

namespace nbits::kernels {
namespace {

using namespace neon8;

// _mm256_hadd_ps: per half, [a0 + a1, a2 + a3, b0 + b1, b2 + b3].
inline V8 hadd8(V8 a, V8 b) { return {vpaddq_f32(a.lo, b.lo), vpaddq_f32(a.hi, b.hi)}; }

struct Neon : F32x8 {
  static constexpr int kAcc = 8;
  static R div(R a, R b) { return div8(a, b); }
  static R exp(R x) { return exp8(x); }
  static R lt_select(R a, R b, R x, R y) {
    return {vbslq_f32(vcltq_f32(a.lo, b.lo), x.lo, y.lo), vbslq_f32(vcltq_f32(a.hi, b.hi), x.hi, y.hi)};
  }
  static void widen(const uint16_t* h, float* f, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) st8(f + i, ld8(h + i));
    for (; i < n; ++i) f[i] = fp16_to_float(h[i]);
  }
  // int8 cache rows (kernels/attention.h): code * scale, 8 codes sign-extended per step.
  static void widen_q8(const int8_t* rows, float* f, int64_t nrows, int64_t H) {
    attn::widen_q8_rows<8>(rows, f, nrows, H, [](const int8_t* c, float scale, float* out) {
      const int16x8_t w = vmovl_s8(vld1_s8(c));
      const float32x4_t s = vdupq_n_f32(scale);
      vst1q_f32(out, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(w))), s));
      vst1q_f32(out + 4, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_high_s16(w))), s));
    });
  }
  // The decode kernel's: AVX2's blocks (6 heads x 2 column vectors), so the sums run in its order.
  static constexpr int kDecodeHeads = 6, kDecodeQRegs = 4;
  // fold4 = hadd(hadd(a0, a1), hadd(a2, a3)); fold_groups adds the halves of the two groups
  // (AVX2's permute2f128 0x20 / 0x31 and add).
  static R fold4(const R* a) { return hadd8(hadd8(a[0], a[1]), hadd8(a[2], a[3])); }
  static R fold_groups(const R* z) { return {vaddq_f32(z[0].lo, z[0].hi), vaddq_f32(z[1].lo, z[1].hi)}; }
  // AVX2's hmax: max(lo, hi), then with movehl, then with movehdup (maxps operand order).
  static float hmax(R x) {
    float32x4_t m = maxps(x.lo, x.hi);
    m = maxps(m, vcombine_f32(vget_high_f32(m), vget_high_f32(m)));
    m = maxps(m, vtrn2q_f32(m, m));
    return vgetq_lane_f32(m, 0);
  }
  // AVX2's hsum: (lo + hi), then (h0 + h2) + (h1 + h3).
  static float hsum(R x) {
    const float32x4_t h = vaddq_f32(x.lo, x.hi);
    const float32x2_t t = vadd_f32(vget_low_f32(h), vget_high_f32(h));
    return vget_lane_f32(t, 0) + vget_lane_f32(t, 1);
  }
  static R iota() {
    const float32x4_t lo = {0.0f, 1.0f, 2.0f, 3.0f};
    return {lo, vaddq_f32(lo, vdupq_n_f32(4.0f))};
  }
};

}  // namespace

attn::TileKernels attention_tile_neon() { return attn::tile_kernels<Neon>("neon"); }
attn::DecodeKernels attention_decode_neon() { return attn::decode_kernels<Neon>(); }

}  // namespace nbits::kernels
