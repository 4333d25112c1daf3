// The SpacemiT IME (vmadot) CompInt8 micro-kernels on t16 panels (quant/packed_panel16.h), run by
// the panel driver (kernels/panel_matmul.h), and their activation tiles. H: fp16 scales.
// Declarations only; built only where NBITS_HAVE_IME_KERNELS (kernels/ime/vmadot.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "quant/packed_panel16.h"

namespace nbits::kernels::ime {

using quant::PackedPanel16;

// M = 1 reads the quantized row directly; M >= 2 reads the A tiles written by tile_row_t16.
template <bool H>
void qgemv_t16_ime(const PackedPanel16& w, int64_t p0, int64_t p1, const int8_t* qa, const float* sa,
                   const int32_t* qsum, float* y, const float* bias);
template <bool H>
void qgemm_t16_ime(const PackedPanel16& w, int64_t p0, int64_t p1, int64_t M, const int8_t* tiles,
                   const float* sa, const int32_t* qsum, float* Y, int64_t ldy, const float* bias);

// A tiles: per (row group g of 4 rows, block b) a record of block/8 tiles of 32 B (4 rows x 8 k),
// then float sa_lanes[16] and int32 sum_lanes[16] (lane 4i+j: row i).
size_t tiles_bytes_t16(const PackedPanel16& w, int64_t M);
void tile_row_t16(const PackedPanel16& w, int64_t m, const int8_t* qa, const float* sa, const int32_t* qsum,
                  uint8_t* tiles);

}  // namespace nbits::kernels::ime
