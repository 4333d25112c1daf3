// CompInt8 M>=2 GEMM (4x8 tiles) on int8 x16 panels, AVX2: avx2::qgemm_x16<8> (x16_twins_avx2_inl.h).
#include "kernels/x86/x16_twins_avx2_inl.h"

namespace nbits::kernels {

template <bool kAsym, int kSc>
void qgemm_q8x16_4x8_avx2(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,
                          const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  avx2::qgemm_x16<8, kAsym, kSc>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
}

NBITS_X16_INT8_INSTANTIATE(qgemm_q8x16_4x8_avx2, const PackedX16&, int64_t, int64_t, int64_t, const int8_t*,
                           const float*, const int32_t*, float*, int64_t, const float*);

}  // namespace nbits::kernels
