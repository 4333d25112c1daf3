// CompInt8 GEMV (M = 1) and GEMM (M >= 2) on int4 and int8 x16 panels, AVX-VNNI: the VNNI tile
// (x16_vnni_tile_inl.h) on ymm, 8 columns per vector, so a 64-byte code group is two vectors
// and a panel two columns of accumulators. 16 ymm registers: the GEMM tile is R rows x 1 panel
// (2R int32 + 2R fp32 accumulators), the GEMV runs 4 panels at once. Measured on a Sapphire
// Rapids core (bench_matmul_nbits, docs/PERFORMANCE.md): 4 x 1 beat 2 x 1, 3 x 1, 6 x 1 and
// 2 x 2 panels; 4 GEMV panels beat 1 and 2.
#include <immintrin.h>

#include "kernels/x86/x16_vnni.h"
#include "kernels/x86/x16_vnni_tile_inl.h"
#include "kernels/x86/x16_vnni_ymm_inl.h"

namespace nbits::kernels {
namespace {

// The VEX vpdpbusd of AVX-VNNI.
struct DpVex {
  static __m256i dp(__m256i d, __m256i u8, __m256i s8) { return _mm256_dpbusd_avx_epi32(d, u8, s8); }
};
using Ymm = x16_vnni::Ymm<DpVex>;

#ifndef NBITS_AVXVNNI_ROWS
#define NBITS_AVXVNNI_ROWS 4
#endif
#ifndef NBITS_AVXVNNI_PANELS
#define NBITS_AVXVNNI_PANELS 1
#endif
#ifndef NBITS_AVXVNNI_GEMV_PANELS
#define NBITS_AVXVNNI_GEMV_PANELS 4
#endif
constexpr int kRows = NBITS_AVXVNNI_ROWS, kPanels = NBITS_AVXVNNI_PANELS;
constexpr int kGemvPanels = NBITS_AVXVNNI_GEMV_PANELS;

}  // namespace

NBITS_X16_VNNI_DEFINE(avxvnni, Ymm, kRows, kPanels, kGemvPanels, kGemvPanels);

}  // namespace nbits::kernels
