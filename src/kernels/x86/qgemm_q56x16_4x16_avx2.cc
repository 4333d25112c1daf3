// CompInt8 GEMV and 4x16 GEMM on int5 and int6 x16 panels, AVX2: avx2::narrow_gemm with Q5Steps /
// Q6Steps (x16_narrow_avx2_inl.h): above one row tile, each panel is first widened once into a
// per-thread int8 panel that the q8n tile reads for every row tile, so the unpacking is paid once per
// panel instead of once per 4 rows. Also widen_x16_panels_avx2 (x16_avx2.h), the VNNI GEMMs' input,
// for every narrow format (int5, int6, lut4, super-block scales).
#include "base/error.h"
#include "kernels/x86/x16_narrow_avx2_inl.h"

namespace nbits::kernels {

// Panels [p, p + n) of `w` in a plain format any int8 tile reads: fp32 scales (and mins) per block
// where `w` has super-block scales ((float)q * D: the source's scales exactly), int8 codes where
// it has int5 / int6 / lut4 ones; the rest as `w` has it.
void widen_x16_panels_avx2(const PackedX16& w, int64_t p, int64_t n, PackedX16& out) {
  const bool narrow = w.bits == 5 || w.bits == 6 || w.lut4, super = w.super_blocks > 0;
  out.bits = narrow ? 8 : w.bits, out.block = w.block, out.K = w.K, out.k_blocks = w.k_blocks, out.panels = n;
  out.lut4 = false;
  out.has_zp = w.has_zp, out.scales_fp16 = w.scales_fp16 && !super, out.has_mins = w.has_mins;
  out.uniform_zp = w.uniform_zp, out.code_lo = w.code_lo, out.code_hi = w.code_hi;
  out.super_blocks = out.super_shift = 0, out.super_stride = out.super_bytes = 0;
  out.mins_offset = out.scales_fp16 ? 32 : 64;
  out.zp_offset = out.mins_offset + (out.has_mins ? 64 : 0);
  out.header_bytes = out.zp_offset + (out.has_zp ? quant::kZpBytes : 0);
  const size_t code_bytes = static_cast<size_t>(16) * w.block * out.bits / 8;
  out.block_stride = out.header_bytes + code_bytes;
  out.panel_stride = out.block_stride * static_cast<size_t>(w.k_blocks);
  out.N = std::min<int64_t>(16 * n, w.N - 16 * p);
  const size_t bytes = out.panel_stride * static_cast<size_t>(n);
  if (out.data.size() < bytes) out.data = quant::AlignedBytes::scratch(bytes);
  const avx2::Q5Steps q5(w);
  const avx2::Q6Steps q6(w);
  const avx2::Lut4Steps<5> l4(w);  // any table: the 8-bit sums wrap back to the codes
  for (int64_t j = 0; j < n; ++j) {
    const uint8_t* src = w.panel(p + j);
    uint8_t* dst = out.data.data() + static_cast<size_t>(j) * out.panel_stride;
    avx2::PanelScales<avx2::kScSuper> sc(w, p + j);
    for (int64_t b = 0; b < w.k_blocks; ++b, src += w.block_stride, dst += out.block_stride) {
      if (super) {
        sc.enter(b, src);
        for (int h = 0; h < 2; ++h) {
          _mm256_storeu_ps(reinterpret_cast<float*>(dst) + 8 * h, sc.scales8(b, src, h));
          if (w.has_mins)
            _mm256_storeu_ps(reinterpret_cast<float*>(dst + out.mins_offset) + 8 * h, sc.mins8(b, src, h));
        }
        if (w.has_zp) std::memcpy(dst + out.zp_offset, src + w.zp_offset, quant::kZpBytes);
      } else {
        std::memcpy(dst, src, w.header_bytes);  // the same header layout
      }
      if (w.lut4)
        avx2::widen_codes(l4, w, src + w.header_bytes, dst + out.header_bytes);
      else if (w.bits == 5)
        avx2::widen_codes(q5, w, src + w.header_bytes, dst + out.header_bytes);
      else if (w.bits == 6)
        avx2::widen_codes(q6, w, src + w.header_bytes, dst + out.header_bytes);
      else
        std::memcpy(dst + out.header_bytes, src + w.header_bytes, code_bytes);
    }
  }
}

template <bool kAsym, int kSc>
void qgemv_q5x16_avx2(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
                      const int32_t* qsum, float* y, const float* bias) {
  avx2::narrow_gemm<avx2::Q5Steps, 5, kAsym, kSc>(w, p0, p1, 1, qa, sa, qsum, y, 0, bias);
}

template <bool kAsym, int kSc>
void qgemm_q5x16_4x16_avx2(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,
                           const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  avx2::narrow_gemm<avx2::Q5Steps, 5, kAsym, kSc>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
}

template <bool kAsym, int kSc>
void qgemv_q6x16_avx2(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
                      const int32_t* qsum, float* y, const float* bias) {
  avx2::narrow_gemm<avx2::Q6Steps, 6, kAsym, kSc>(w, p0, p1, 1, qa, sa, qsum, y, 0, bias);
}

template <bool kAsym, int kSc>
void qgemm_q6x16_4x16_avx2(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,
                           const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  avx2::narrow_gemm<avx2::Q6Steps, 6, kAsym, kSc>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
}

NBITS_X16_INT8_INSTANTIATE(qgemv_q5x16_avx2, const PackedX16&, int64_t, int64_t, const int8_t*, const float*,
                           const int32_t*, float*, const float*);
NBITS_X16_INT8_INSTANTIATE(qgemm_q5x16_4x16_avx2, const PackedX16&, int64_t, int64_t, int64_t, const int8_t*,
                           const float*, const int32_t*, float*, int64_t, const float*);
NBITS_X16_INT8_INSTANTIATE(qgemv_q6x16_avx2, const PackedX16&, int64_t, int64_t, const int8_t*, const float*,
                           const int32_t*, float*, const float*);
NBITS_X16_INT8_INSTANTIATE(qgemm_q6x16_4x16_avx2, const PackedX16&, int64_t, int64_t, int64_t, const int8_t*,
                           const float*, const int32_t*, float*, int64_t, const float*);

}  // namespace nbits::kernels
