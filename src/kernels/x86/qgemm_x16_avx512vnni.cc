// CompInt8 GEMV (M = 1) and GEMM (M >= 2) on int4 and int8 x16 panels, AVX-512 VNNI: the
// VNNI tile (x16_vnni_tile_inl.h) on zmm, one 64-byte code group per vector. M = 1 runs R = 1
// on 4 (int4) or 8 (int8) panels at once so the dot chains stay independent.
// GCC 12 reports _mm512_undefined_ps() (used inside _mm512_cvtepi32_ps and
// _mm512_cvtph_ps) as maybe-uninitialized: a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/x86/x16_avx512_inl.h"
#include "kernels/x86/x16_vnni.h"
#include "kernels/x86/x16_vnni_tile_inl.h"

namespace nbits::kernels {
namespace {
using x16_avx512::Zmm;

// GEMM tile: 6 rows x 2 panels (12 int32 + 12 fp32 accumulators of the 32 zmm); measured against
// 4x2, 4x3, 5x2, 3x3 and 8x1 (docs/PERFORMANCE.md, "AVX-512 VNNI GEMM tile").
#ifndef NBITS_VNNI_ROWS
#define NBITS_VNNI_ROWS 6
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

NBITS_X16_VNNI_DEFINE(avx512vnni, Zmm, kRows, kPanels, kGemvPanelsQ4, kGemvPanelsQ8);

}  // namespace nbits::kernels
