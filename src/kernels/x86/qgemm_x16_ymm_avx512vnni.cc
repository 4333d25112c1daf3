// CompInt8 GEMV (M = 1) and GEMM (M >= 2) on int4 and int8 x16 panels, AVX-512 VNNI on ymm: the
// VNNI tile (x16_vnni_tile_inl.h) with the EVEX-encoded 256-bit vpdpbusd (AVX512VL). AMD Zen4
// executes each 512-bit operation as two 256-bit halves, and there the zmm GEMV lost 1.4x to the
// AVX2 one (docs/PERFORMANCE.md); these kernels are the 256-bit candidate that the load-time
// kernel choice (kernels/kernel_choice.h) times against the zmm and AVX2 ones. The EVEX encoding
// reaches 32 ymm registers: the GEMM tile is 6 rows x 1 panel (12 int32 + 12 fp32 accumulators),
// the GEMV runs 4 panels at once.
#include <immintrin.h>

#include "kernels/x86/x16_vnni.h"
#include "kernels/x86/x16_vnni_tile_inl.h"
#include "kernels/x86/x16_vnni_ymm_inl.h"

namespace nbits::kernels {
namespace {

// The EVEX vpdpbusd of AVX-512 VNNI on ymm.
struct DpEvex {
  static __m256i dp(__m256i d, __m256i u8, __m256i s8) { return _mm256_dpbusd_epi32(d, u8, s8); }
};
using Ymm = x16_vnni::Ymm<DpEvex>;

#ifndef NBITS_YMM_VNNI_ROWS
#define NBITS_YMM_VNNI_ROWS 6
#endif
#ifndef NBITS_YMM_VNNI_PANELS
#define NBITS_YMM_VNNI_PANELS 1
#endif
#ifndef NBITS_YMM_VNNI_GEMV_PANELS_Q4
#define NBITS_YMM_VNNI_GEMV_PANELS_Q4 4
#endif
#ifndef NBITS_YMM_VNNI_GEMV_PANELS_Q8
#define NBITS_YMM_VNNI_GEMV_PANELS_Q8 4
#endif
constexpr int kRows = NBITS_YMM_VNNI_ROWS, kPanels = NBITS_YMM_VNNI_PANELS;
constexpr int kGemvPanelsQ4 = NBITS_YMM_VNNI_GEMV_PANELS_Q4, kGemvPanelsQ8 = NBITS_YMM_VNNI_GEMV_PANELS_Q8;

}  // namespace

NBITS_X16_VNNI_DEFINE(ymm_avx512vnni, Ymm, kRows, kPanels, kGemvPanelsQ4, kGemvPanelsQ8);

}  // namespace nbits::kernels
