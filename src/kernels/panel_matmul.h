// The one PackedMatMul driver of the panel kernel sets (x86, arm64, RVV, IME): it owns the
// threading policy and the scratch; a kernel set plugs in its pack (quant::PackedX16 or
// quant::PackedPanel16), its activation quantizer and its micro-kernels through the tables below.
//
// Policy, the same on every ISA:
//  * CompInt8: rows of A quantized per weight block by the set's quantizer (in parallel over rows
//    when M > 1) into per-calling-thread scratch (row layout: codes [M][k_blocks*block], zero past
//    K; scales and integer block sums [M][k_blocks]); optionally re-laid out for the GEMM (IME A tiles).
//  * CompFp32: rows zero-padded to whole blocks when K is not a multiple of the block; for M = 1
//    the block sums of the row.
//  * The panels are split over the pool in contiguous ranges of at least 64 KiB of packed
//    weights per task (scaled down by M, since each panel is then used M times).
//  * Scratch is per calling thread, shared by every matrix it runs, grown to the largest M seen:
//    no allocation after that, and several sessions may run one PackedMatMul at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/matmul_nbits.h"
#include "quant/packed_panel16.h"
#include "quant/packed_x16.h"

namespace nbits::kernels {

// Same numerics as quant::quantize_row_blocks, plus the integer sum of each block's codes.
using QuantizeRowFn = void (*)(const float* a, int64_t K, int block, int8_t* qa, float* sa, int32_t* qsum);

// Scalar quantize with integer block sums (the reference numerics).
void quantize_row_blocks_isum(const float* a, int64_t K, int block, int8_t* qa, float* sa, int32_t* qsum);

// Micro-kernels for CompInt8 on panels [p0, p1) of a Pack. `qa` rows are k_blocks*block int8
// (zero past K; readable 64 bytes past the last row), `sa` / `qsum` rows are k_blocks (scale
// and integer sum of each activation block). Y rows have stride ldy; bias may be null.
template <class Pack>
struct PanelInt8Kernels {
  const char* gemv_name;
  const char* gemm_name;
  QuantizeRowFn quantize;
  void (*gemv)(const Pack& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa, const int32_t* qsum,
               float* y, const float* bias);
  void (*gemm)(const Pack& w, int64_t p0, int64_t p1, int64_t M, const int8_t* qa, const float* sa,
               const int32_t* qsum, float* Y, int64_t ldy, const float* bias);
  // Optional second activation layout for gemm (M >= 2), e.g. IME's 4-row vmadot A tiles:
  // its bytes for M rows, and the copy of quantized row m into it (called for the rows in
  // parallel: rows land on disjoint bytes). gemm then receives these bytes as `qa`.
  size_t (*tiles_bytes)(const Pack& w, int64_t M) = nullptr;
  void (*tile_row)(const Pack& w, int64_t m, const int8_t* qa, const float* sa, const int32_t* qsum,
                   uint8_t* tiles) = nullptr;
  // Optional GEMM for a few rows (2 <= M <= kSmallRows: speculative verify steps, batched decode),
  // where another tile may stream the weights faster than the one chosen for prefill; null: gemm.
  const char* gemm_small_name = nullptr;
  decltype(gemm) gemm_small = nullptr;
  static constexpr int64_t kSmallRows = 8;
  bool small(int64_t M) const { return gemm_small != nullptr && M >= 2 && M <= kSmallRows; }
};

// Micro-kernels for CompFp32. `A` rows have k_blocks*block floats (zero past K), stride lda;
// gemv also gets `asum`, the sum of each block of its A row.
template <class Pack>
struct PanelFp32Kernels {
  const char* gemv_name;
  const char* gemm_name;
  void (*gemv)(const Pack& w, int64_t p0, int64_t p1, const float* a, const float* asum, float* y,
               const float* bias);
  void (*gemm)(const Pack& w, int64_t p0, int64_t p1, int64_t M, const float* A, int64_t lda, float* Y,
               int64_t ldy, const float* bias);
};

// The driver around a packed weight and its micro-kernels.
template <class Pack>
std::unique_ptr<PackedMatMul> make_panel_int8(Pack w, const PanelInt8Kernels<Pack>& k);
template <class Pack>
std::unique_ptr<PackedMatMul> make_panel_fp32(Pack w, const PanelFp32Kernels<Pack>& k);

extern template std::unique_ptr<PackedMatMul> make_panel_int8(quant::PackedX16,
                                                              const PanelInt8Kernels<quant::PackedX16>&);
extern template std::unique_ptr<PackedMatMul> make_panel_int8(quant::PackedPanel16,
                                                              const PanelInt8Kernels<quant::PackedPanel16>&);
extern template std::unique_ptr<PackedMatMul> make_panel_fp32(quant::PackedX16,
                                                              const PanelFp32Kernels<quant::PackedX16>&);
extern template std::unique_ptr<PackedMatMul> make_panel_fp32(quant::PackedPanel16,
                                                              const PanelFp32Kernels<quant::PackedPanel16>&);

}  // namespace nbits::kernels
