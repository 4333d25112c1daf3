// CompInt8 GEMV and 4x16 GEMM on int5 and int6 x16 panels, AVX2: avx2::qgemm_steps with Q5Steps /
// Q6Steps (x16_twins_avx2_inl.h). Above one row tile, each panel is first widened once into a
// per-thread int8 panel (codes code_lo + 0..2^bits - 1) that the q8n tile reads for every row tile,
// so the unpacking is paid once per panel instead of once per 4 rows.
#include "base/error.h"
#include "kernels/x86/x16_twins_avx2_inl.h"

namespace nbits::kernels {
namespace {

// Panels [p, p + n) of int5 / int6 `w` (Steps: Q5Steps / Q6Steps) as an n-panel int8 PackedX16
// (same headers) in `out`.
template <class Steps>
void widen_panels(const PackedX16& w, int64_t p, int64_t n, PackedX16& out) {
  out.bits = 8, out.block = w.block, out.K = w.K, out.k_blocks = w.k_blocks, out.panels = n;
  out.has_zp = w.has_zp, out.scales_fp16 = w.scales_fp16, out.has_mins = w.has_mins;
  out.uniform_zp = w.uniform_zp, out.code_lo = w.code_lo, out.code_hi = w.code_hi;
  out.mins_offset = w.mins_offset, out.zp_offset = w.zp_offset, out.header_bytes = w.header_bytes;
  out.super_blocks = w.super_blocks, out.super_shift = w.super_shift, out.super_stride = w.super_stride;
  out.super_bytes = w.super_bytes;
  out.block_stride = w.header_bytes + static_cast<size_t>(16) * w.block;
  out.panel_stride = w.super_bytes + out.block_stride * static_cast<size_t>(w.k_blocks);
  out.N = std::min<int64_t>(16 * n, w.N - 16 * p);
  const size_t bytes = out.panel_stride * static_cast<size_t>(n);
  if (out.data.size() < bytes) out.data = quant::AlignedBytes::uninitialized(bytes);
  const Steps st(w);
  const __m256i lo = _mm256_set1_epi8(static_cast<char>(w.code_lo));
  for (int64_t j = 0; j < n; ++j) {
    const uint8_t* src = w.panel(p + j);
    uint8_t* base = out.data.data() + static_cast<size_t>(j) * out.panel_stride;
    std::memcpy(base, src - w.super_bytes, w.super_bytes);  // the super-block headers
    uint8_t* dst = base + w.super_bytes;
    for (int64_t b = 0; b < w.k_blocks; ++b, src += w.block_stride, dst += out.block_stride) {
      std::memcpy(dst, src, w.header_bytes);
      for (int64_t s = 0; s < w.block / 4; ++s) {
        __m256i c0, c1;
        st.load(src + w.header_bytes, s, c0, c1);
        uint8_t* d = dst + w.header_bytes + 64 * s;
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), _mm256_add_epi8(c0, lo));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + 32), _mm256_add_epi8(c1, lo));
      }
    }
  }
}

// The GEMV and GEMM on panels of Steps (Q5Steps / Q6Steps), widened to int8 codes of Bits' span.
template <class Steps, int Bits, bool kAsym, int kSc>
void narrow_gemm(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa, const float* sa,
                 const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  if (M <= 4) return avx2::qgemm_steps<Steps, kAsym, kSc>(w, p0, p1, M, Steps(w), qa, sa, qsum, Y, ldy, bias);
  thread_local PackedX16 wide;
  const avx2::NarrowQ8Steps<Bits> st(w.code_lo);
  for (int64_t p = p0; p < p1; ++p) {
    widen_panels<Steps>(w, p, 1, wide);
    avx2::qgemm_steps<avx2::NarrowQ8Steps<Bits>, kAsym, kSc>(wide, 0, 1, M, st, qa, sa, qsum, Y + 16 * p, ldy,
                                                             bias != nullptr ? bias + 16 * p : nullptr);
  }
}

}  // namespace

void widen_x16_panels_avx2(const PackedX16& w, int64_t p, int64_t n, PackedX16& out) {
  if (w.bits == 5) return widen_panels<avx2::Q5Steps>(w, p, n, out);
  NBITS_CHECK(w.bits == 6, "widen_x16_panels_avx2: int5 or int6 panels only, not ", w.bits, " bits");
  widen_panels<avx2::Q6Steps>(w, p, n, out);
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

NBITS_X16_INT8_INSTANTIATE(qgemv_q5x16_avx2, const PackedX16&, int64_t, int64_t, const int8_t*, const float*,
                           const int32_t*, float*, const float*);
NBITS_X16_INT8_INSTANTIATE(qgemm_q5x16_4x16_avx2, const PackedX16&, int64_t, int64_t, int64_t, const int8_t*,
                           const float*, const int32_t*, float*, int64_t, const float*);
NBITS_X16_INT8_INSTANTIATE(qgemv_q6x16_avx2, const PackedX16&, int64_t, int64_t, const int8_t*, const float*,
                           const int32_t*, float*, const float*);
NBITS_X16_INT8_INSTANTIATE(qgemm_q6x16_4x16_avx2, const PackedX16&, int64_t, int64_t, int64_t, const int8_t*,
                           const float*, const int32_t*, float*, int64_t, const float*);

}  // namespace nbits::kernels
