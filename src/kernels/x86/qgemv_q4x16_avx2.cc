// CompInt8 M=1 GEMV on int4 x16 panels, AVX2: avx2::qgemv_x16<4> (x16_twins_avx2_inl.h).
#include "kernels/x86/x16_twins_avx2_inl.h"

namespace nbits::kernels {

template <bool kAsym, int kSc>
void qgemv_q4x16_avx2(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
                      const int32_t* qsum, float* y, const float* bias) {
  avx2::qgemv_x16<4, kAsym, kSc>(w, p0, p1, qa, sa, qsum, y, bias);
}

NBITS_X16_INT8_INSTANTIATE(qgemv_q4x16_avx2, const PackedX16&, int64_t, int64_t, const int8_t*, const float*,
                           const int32_t*, float*, const float*);

}  // namespace nbits::kernels
