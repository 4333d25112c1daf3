// CompInt8 GEMV and 4x16 GEMM on lut4 x16 panels (PackedX16::lut4: GGUF MXFP4 / NVFP4, IQ4_NL /
// IQ4_XS and the IQ lattices at 4 bits), AVX2: avx2::narrow_gemm with Lut4Steps
// (x16_twins_avx2_inl.h, x16_narrow_avx2_inl.h), chosen by the span of the weight's table.
#include "base/error.h"
#include "kernels/x86/x16_narrow_avx2_inl.h"

namespace nbits::kernels {
namespace {

// lut4 by the span of its codes: within 32 values (MXFP4, IQ3_S, IQ1) or 128 (IQ2, IQ3_XXS) unsigned,
// wider (IQ4_NL / IQ4_XS) signed.
template <int kSc>
void lut4_gemm(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa, const float* sa,
               const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  const int span = w.code_span_bits();
  if (span <= 5)
    return avx2::narrow_gemm<avx2::Lut4Steps<5>, 5, false, kSc>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
  if (span <= 7)
    return avx2::narrow_gemm<avx2::Lut4Steps<7>, 7, false, kSc>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
  avx2::narrow_gemm<avx2::Lut4Steps<8>, 8, false, kSc>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
}

}  // namespace

template <int kSc>
void qgemv_q4lx16_avx2(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
                       const int32_t* qsum, float* y, const float* bias) {
  NBITS_CHECK(w.lut4 && !w.has_zp, "qgemv_q4lx16_avx2: a lut4 weight without zero points");
  lut4_gemm<kSc>(w, p0, p1, 1, qa, sa, qsum, y, 0, bias);
}

template <int kSc>
void qgemm_q4lx16_4x16_avx2(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,
                            const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  NBITS_CHECK(w.lut4 && !w.has_zp, "qgemm_q4lx16_4x16_avx2: a lut4 weight without zero points");
  lut4_gemm<kSc>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
}

#define NBITS_LUT4_INSTANTIATE(sc)                                                                     \
  template void qgemv_q4lx16_avx2<sc>(const PackedX16&, int64_t, int64_t, const int8_t*, const float*, \
                                      const int32_t*, float*, const float*);                           \
  template void qgemm_q4lx16_4x16_avx2<sc>(const PackedX16&, int64_t, int64_t, int64_t, const int8_t*, \
                                           const float*, const int32_t*, float*, int64_t, const float*)
NBITS_LUT4_INSTANTIATE(0);
NBITS_LUT4_INSTANTIATE(1);
NBITS_LUT4_INSTANTIATE(2);
#undef NBITS_LUT4_INSTANTIATE

}  // namespace nbits::kernels
