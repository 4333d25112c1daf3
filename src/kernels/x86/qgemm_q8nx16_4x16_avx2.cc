// CompInt8 GEMV and 4x16 GEMM on int8 x16 panels of narrow codes (code_hi - code_lo < 2^kSpanBits),
// AVX2: avx2::qgemm_steps with NarrowQ8Steps (x16_twins_avx2_inl.h).
#include "kernels/x86/x16_twins_avx2_inl.h"

namespace nbits::kernels {

template <int kSpanBits, bool kAsym, int kSc>
void qgemv_q8nx16_avx2(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
                       const int32_t* qsum, float* y, const float* bias) {
  const avx2::NarrowQ8Steps<kSpanBits> st(w.code_lo);
  avx2::qgemm_steps<avx2::NarrowQ8Steps<kSpanBits>, kAsym, kSc>(w, p0, p1, 1, st, qa, sa, qsum, y, 0, bias);
}

template <int kSpanBits, bool kAsym, int kSc>
void qgemm_q8nx16_4x16_avx2(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,
                            const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  const avx2::NarrowQ8Steps<kSpanBits> st(w.code_lo);
  avx2::qgemm_steps<avx2::NarrowQ8Steps<kSpanBits>, kAsym, kSc>(w, p0, p1, M, st, qa, sa, qsum, Y, ldy, bias);
}

#define NBITS_Q8N_INSTANTIATE(span, asym, sc)                                                               \
  template void qgemv_q8nx16_avx2<span, asym, sc>(const PackedX16&, int64_t, int64_t, const int8_t*,        \
                                                  const float*, const int32_t*, float*, const float*);      \
  template void qgemm_q8nx16_4x16_avx2<span, asym, sc>(const PackedX16&, int64_t, int64_t, int64_t,         \
                                                       const int8_t*, const float*, const int32_t*, float*, \
                                                       int64_t, const float*)
#define NBITS_Q8N_SPAN(span)             \
  NBITS_Q8N_INSTANTIATE(span, false, 0); \
  NBITS_Q8N_INSTANTIATE(span, false, 1); \
  NBITS_Q8N_INSTANTIATE(span, false, 2); \
  NBITS_Q8N_INSTANTIATE(span, true, 0);  \
  NBITS_Q8N_INSTANTIATE(span, true, 1);  \
  NBITS_Q8N_INSTANTIATE(span, true, 2)
NBITS_Q8N_SPAN(5);
NBITS_Q8N_SPAN(6);
NBITS_Q8N_SPAN(7);
#undef NBITS_Q8N_SPAN
#undef NBITS_Q8N_INSTANTIATE

}  // namespace nbits::kernels
