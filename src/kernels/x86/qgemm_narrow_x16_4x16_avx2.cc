// CompInt8 GEMV and 4x16 GEMM on the formats only the AVX2 set reads narrow (int5, int6 and lut4
// x16 panels): avx2::qgemm_steps with Q5Steps / Q6Steps / Lut4Steps (x16_twins_avx2_inl.h). Above
// one row tile, each panel is first widened once into a per-thread int8 panel (codes code_lo +
// 0..2^bits - 1) that the q8n tile reads for every row tile, so the unpacking is paid once per panel
// instead of once per 4 rows. Also widen_x16_panels_avx2 (x16_avx2.h), the VNNI GEMMs' input.
#include "base/error.h"
#include "kernels/x86/x16_twins_avx2_inl.h"

namespace nbits::kernels {
namespace {

// One block's int5 / int6 / lut4 codes (Steps: Q5Steps / Q6Steps / Lut4Steps) as int8 codes
// code_lo + 0..2^bits - 1.
template <class Steps>
void widen_codes(const Steps& st, const PackedX16& w, const uint8_t* src, uint8_t* dst) {
  const __m256i lo = _mm256_set1_epi8(static_cast<char>(st.offset()));
  for (int64_t s = 0; s < w.block / 4; ++s) {
    __m256i c0, c1;
    st.load(src, s, c0, c1);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 64 * s), _mm256_add_epi8(c0, lo));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 64 * s + 32), _mm256_add_epi8(c1, lo));
  }
}

// Panels [p, p + n) of int5 / int6 / lut4 `w` (Steps: Q5Steps / Q6Steps / Lut4Steps) as an n-panel
// int8 PackedX16 (same headers) in `out`, for the q8n tile below.
template <class Steps>
void widen_panels(const PackedX16& w, int64_t p, int64_t n, PackedX16& out) {
  out.bits = 8, out.block = w.block, out.K = w.K, out.k_blocks = w.k_blocks, out.panels = n, out.lut4 = false;
  out.has_zp = w.has_zp, out.scales_fp16 = w.scales_fp16, out.has_mins = w.has_mins;
  out.uniform_zp = w.uniform_zp, out.code_lo = w.code_lo, out.code_hi = w.code_hi;
  out.mins_offset = w.mins_offset, out.zp_offset = w.zp_offset, out.header_bytes = w.header_bytes;
  out.super_blocks = w.super_blocks, out.super_shift = w.super_shift, out.super_stride = w.super_stride;
  out.super_bytes = w.super_bytes;
  out.block_stride = w.header_bytes + static_cast<size_t>(16) * w.block;
  out.panel_stride = w.super_bytes + out.block_stride * static_cast<size_t>(w.k_blocks);
  out.N = std::min<int64_t>(16 * n, w.N - 16 * p);
  const size_t bytes = out.panel_stride * static_cast<size_t>(n);
  if (out.data.size() < bytes) out.data = quant::AlignedBytes::scratch(bytes);
  const Steps st(w);
  for (int64_t j = 0; j < n; ++j) {
    const uint8_t* src = w.panel(p + j);
    uint8_t* base = out.data.data() + static_cast<size_t>(j) * out.panel_stride;
    std::memcpy(base, src - w.super_bytes, w.super_bytes);  // the super-block headers
    uint8_t* dst = base + w.super_bytes;
    for (int64_t b = 0; b < w.k_blocks; ++b, src += w.block_stride, dst += out.block_stride) {
      std::memcpy(dst, src, w.header_bytes);
      widen_codes(st, w, src + w.header_bytes, dst + w.header_bytes);
    }
  }
}

// The GEMV and GEMM on panels of Steps (Q5Steps / Q6Steps / Lut4Steps), widened to int8 codes of
// Bits' span above 4 rows (the q8n tile; 8: any span, the sign-trick int8 tile).
template <class Steps, int Bits, bool kAsym, int kSc>
void narrow_gemm(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa, const float* sa,
                 const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  if (M <= 4) return avx2::qgemm_steps<Steps, kAsym, kSc>(w, p0, p1, M, Steps(w), qa, sa, qsum, Y, ldy, bias);
  thread_local PackedX16 wide;
  if constexpr (Bits == 8) {
    for (int64_t p = p0; p < p1; ++p) {
      widen_panels<Steps>(w, p, 1, wide);
      avx2::qgemm_x16<8, kAsym, kSc>(wide, 0, 1, M, qa, sa, qsum, Y + 16 * p, ldy,
                                     bias != nullptr ? bias + 16 * p : nullptr);
    }
  } else {
    const avx2::NarrowQ8Steps<Bits> st(w.code_lo);
    for (int64_t p = p0; p < p1; ++p) {
      widen_panels<Steps>(w, p, 1, wide);
      avx2::qgemm_steps<avx2::NarrowQ8Steps<Bits>, kAsym, kSc>(
          wide, 0, 1, M, st, qa, sa, qsum, Y + 16 * p, ldy, bias != nullptr ? bias + 16 * p : nullptr);
    }
  }
}

}  // namespace

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
        widen_codes(l4, w, src + w.header_bytes, dst + out.header_bytes);
      else if (w.bits == 5)
        widen_codes(q5, w, src + w.header_bytes, dst + out.header_bytes);
      else if (w.bits == 6)
        widen_codes(q6, w, src + w.header_bytes, dst + out.header_bytes);
      else
        std::memcpy(dst + out.header_bytes, src + w.header_bytes, code_bytes);
    }
  }
}

template <bool kAsym, int kSc>
void qgemv_q5x16_avx2(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
                      const int32_t* qsum, float* y, const float* bias) {
  narrow_gemm<avx2::Q5Steps, 5, kAsym, kSc>(w, p0, p1, 1, qa, sa, qsum, y, 0, bias);
}

template <bool kAsym, int kSc>
void qgemm_q5x16_4x16_avx2(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,
                           const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  narrow_gemm<avx2::Q5Steps, 5, kAsym, kSc>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
}

template <bool kAsym, int kSc>
void qgemv_q6x16_avx2(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
                      const int32_t* qsum, float* y, const float* bias) {
  narrow_gemm<avx2::Q6Steps, 6, kAsym, kSc>(w, p0, p1, 1, qa, sa, qsum, y, 0, bias);
}

template <bool kAsym, int kSc>
void qgemm_q6x16_4x16_avx2(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,
                           const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  narrow_gemm<avx2::Q6Steps, 6, kAsym, kSc>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
}

namespace {

// lut4 by the span of its codes: within 32 values (MXFP4, IQ3_S, IQ1) or 128 (IQ2, IQ3_XXS) unsigned,
// wider (IQ4_NL / IQ4_XS) signed.
template <bool kAsym, int kSc>
void lut4_gemm(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa, const float* sa,
               const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  const int span = w.code_span_bits();
  if (span <= 5)
    return narrow_gemm<avx2::Lut4Steps<5>, 5, kAsym, kSc>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
  if (span <= 7)
    return narrow_gemm<avx2::Lut4Steps<7>, 7, kAsym, kSc>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
  narrow_gemm<avx2::Lut4Steps<8>, 8, kAsym, kSc>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
}

}  // namespace

template <bool kAsym, int kSc>
void qgemv_q4lx16_avx2(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
                       const int32_t* qsum, float* y, const float* bias) {
  lut4_gemm<kAsym, kSc>(w, p0, p1, 1, qa, sa, qsum, y, 0, bias);
}

template <bool kAsym, int kSc>
void qgemm_q4lx16_4x16_avx2(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,
                            const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  lut4_gemm<kAsym, kSc>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
}

NBITS_X16_INT8_INSTANTIATE(qgemv_q5x16_avx2, const PackedX16&, int64_t, int64_t, const int8_t*, const float*,
                           const int32_t*, float*, const float*);
NBITS_X16_INT8_INSTANTIATE(qgemm_q5x16_4x16_avx2, const PackedX16&, int64_t, int64_t, int64_t, const int8_t*,
                           const float*, const int32_t*, float*, int64_t, const float*);
NBITS_X16_INT8_INSTANTIATE(qgemv_q6x16_avx2, const PackedX16&, int64_t, int64_t, const int8_t*, const float*,
                           const int32_t*, float*, const float*);
NBITS_X16_INT8_INSTANTIATE(qgemm_q6x16_4x16_avx2, const PackedX16&, int64_t, int64_t, int64_t, const int8_t*,
                           const float*, const int32_t*, float*, int64_t, const float*);
NBITS_X16_INT8_INSTANTIATE(qgemv_q4lx16_avx2, const PackedX16&, int64_t, int64_t, const int8_t*, const float*,
                           const int32_t*, float*, const float*);
NBITS_X16_INT8_INSTANTIATE(qgemm_q4lx16_4x16_avx2, const PackedX16&, int64_t, int64_t, int64_t, const int8_t*,
                           const float*, const int32_t*, float*, int64_t, const float*);

}  // namespace nbits::kernels
