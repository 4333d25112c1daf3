// CompFp32 M>=2 GEMM (4x8 tiles) on int4 x16 panels, AVX2: avx2::fgemm_x16<4> (x16_twins_avx2_inl.h).
#include "kernels/x86/x16_twins_avx2_inl.h"

namespace nbits::kernels {

template <bool kAsym, bool kF16>
void fgemm_q4x16_4x8_avx2(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const float* A, int64_t lda,
                          float* Y, int64_t ldy, const float* bias) {
  avx2::fgemm_x16<4, kAsym, kF16>(w, p0, p1, M, A, lda, Y, ldy, bias);
}

NBITS_X16_INSTANTIATE(fgemm_q4x16_4x8_avx2, const PackedX16&, int64_t, int64_t, int64_t, const float*,
                      int64_t, float*, int64_t, const float*);

}  // namespace nbits::kernels
