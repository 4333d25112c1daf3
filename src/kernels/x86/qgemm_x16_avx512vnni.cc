// CompInt8 GEMV (M = 1) and GEMM (M >= 2) on int4 and int8 x16 panels, AVX-512 VNNI: the
// VNNI tile (x16_vnni_tile_inl.h) on zmm, one 64-byte code group per vector. M = 1 runs R = 1
// on 4 (int4) or 8 (int8) panels at once so the dot chains stay independent.
// GCC 12 reports _mm512_undefined_ps() (used inside _mm512_cvtepi32_ps and
// _mm512_cvtph_ps) as maybe-uninitialized: a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/x86/x16_avx512_inl.h"
#include "kernels/x86/x16_avx512vnni.h"
#include "kernels/x86/x16_vnni_tile_inl.h"

namespace nbits::kernels {
namespace {
using x16_avx512::Zmm;
using x16_vnni::run_tiles;

#ifndef NBITS_VNNI_ROWS
#define NBITS_VNNI_ROWS 4
#endif
#ifndef NBITS_VNNI_PANELS
#define NBITS_VNNI_PANELS 2
#endif
// GEMV panels at once: int8 has no nibble unpack, so 8 panels (8 code + 8 int32
// + 8 fp32 zmm) still fit the 32 registers; int4 needs 8 more for the high nibbles.
#ifndef NBITS_VNNI_GEMV_PANELS_Q4
#define NBITS_VNNI_GEMV_PANELS_Q4 4
#endif
#ifndef NBITS_VNNI_GEMV_PANELS_Q8
#define NBITS_VNNI_GEMV_PANELS_Q8 8
#endif
constexpr int kRows = NBITS_VNNI_ROWS, kPanels = NBITS_VNNI_PANELS;
constexpr int kGemvPanelsQ4 = NBITS_VNNI_GEMV_PANELS_Q4, kGemvPanelsQ8 = NBITS_VNNI_GEMV_PANELS_Q8;

}  // namespace

template <bool kAsym, bool kF16>
void qgemv_q4x16_avx512vnni(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
                            const int32_t* qsum, float* y, const float* bias) {
  run_tiles<Zmm, 4, 1, kGemvPanelsQ4, kAsym, kF16>(w, p0, p1, 1, qa, sa, qsum, y, 0, bias);
}
template <bool kAsym, bool kF16>
void qgemv_q8x16_avx512vnni(const PackedX16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
                            const int32_t* qsum, float* y, const float* bias) {
  run_tiles<Zmm, 8, 1, kGemvPanelsQ8, kAsym, kF16>(w, p0, p1, 1, qa, sa, qsum, y, 0, bias);
}
template <bool kAsym, bool kF16>
void qgemm_q4x16_avx512vnni(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,
                            const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  run_tiles<Zmm, 4, kRows, kPanels, kAsym, kF16>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
}
template <bool kAsym, bool kF16>
void qgemm_q8x16_avx512vnni(const PackedX16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa,
                            const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias) {
  run_tiles<Zmm, 8, kRows, kPanels, kAsym, kF16>(w, p0, p1, M, qa, sa, qsum, Y, ldy, bias);
}

NBITS_X16_INSTANTIATE(qgemv_q4x16_avx512vnni, const PackedX16&, int64_t, int64_t, const int8_t*, const float*,
                      const int32_t*, float*, const float*);
NBITS_X16_INSTANTIATE(qgemv_q8x16_avx512vnni, const PackedX16&, int64_t, int64_t, const int8_t*, const float*,
                      const int32_t*, float*, const float*);
NBITS_X16_INSTANTIATE(qgemm_q4x16_avx512vnni, const PackedX16&, int64_t, int64_t, int64_t, const int8_t*,
                      const float*, const int32_t*, float*, int64_t, const float*);
NBITS_X16_INSTANTIATE(qgemm_q8x16_avx512vnni, const PackedX16&, int64_t, int64_t, int64_t, const int8_t*,
                      const float*, const int32_t*, float*, int64_t, const float*);

}  // namespace nbits::kernels
