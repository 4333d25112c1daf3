// The AVX2 kernels on the formats only they read narrow (int5 / int6 / lut4 x16 panels): a panel
// widened to int8 codes (code_lo + 0..2^bits - 1) once for every row tile above 4 rows, and the
// GEMV / small-M GEMM on the panels as they are. Shared by qgemm_q56x16_4x16_avx2.cc and
// qgemm_q4lx16_4x16_avx2.cc. Include only from files compiled with AVX2.
#pragma once

#include <cstring>

#include "kernels/x86/x16_twins_avx2_inl.h"

namespace nbits::kernels::avx2 {

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
  if (M <= 4) return qgemm_steps<Steps, kAsym, kSc>(w, p0, p1, M, Steps(w), qa, sa, qsum, Y, ldy, bias);
  thread_local PackedX16 wide;
  if constexpr (Bits == 8) {
    for (int64_t p = p0; p < p1; ++p) {
      widen_panels<Steps>(w, p, 1, wide);
      qgemm_x16<8, kAsym, kSc>(wide, 0, 1, M, qa, sa, qsum, Y + 16 * p, ldy,
                               bias != nullptr ? bias + 16 * p : nullptr);
    }
  } else {
    const NarrowQ8Steps<Bits> st(w.code_lo);
    for (int64_t p = p0; p < p1; ++p) {
      widen_panels<Steps>(w, p, 1, wide);
      qgemm_steps<NarrowQ8Steps<Bits>, kAsym, kSc>(wide, 0, 1, M, st, qa, sa, qsum, Y + 16 * p, ldy,
                                                   bias != nullptr ? bias + 16 * p : nullptr);
    }
  }
}

}  // namespace nbits::kernels::avx2
