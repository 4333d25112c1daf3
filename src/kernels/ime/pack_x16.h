// "x16" packed weights for the IME kernels (the K1 work's Q4x16 / Q8x16 panels, any block size
// that is a multiple of 16): panels of 16 output columns; inside, column groups of 4 so that
// one 32-byte load is a vmadot B^T tile (4 columns x 8 k).
//
// Per (panel p, block b) record, `block_stride` bytes (header as rvv/panel_scales.h):
//   scales[16]: float (64 B), or IEEE fp16 (32 B) when scales_fp16
//   uint8 zp[16] (only if has_zp): zero point of each column (kernels widen and, for M >= 2,
//     gather them into the 4x4 accumulator layout)
//   int4 codes, per 16 k: 128 B = 16 columns x 8 B, byte t = code(k0+t) | code(k0+t+8) << 4:
//     low nibbles = the tile for k0..k0+7, high nibbles = k0+8..k0+15 (llama.cpp's layout)
//   int8 codes, per 8 k: 128 B = 16 columns x 8 B (k contiguous)
// Columns past N have scale 0, code 0; codes past K are 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/matmul_nbits.h"

namespace nbits::kernels::ime {

struct PackX16 {
  int64_t N = 0, K = 0, kb = 0, panels = 0;
  int bits = 4, bs = 32;
  bool has_zp = false;
  bool scales_fp16 = false;  // scales stored as fp16 (32 bytes) rather than float (64)
  size_t zp_offset = 0, codes_offset = 0, block_stride = 0;
  std::vector<uint8_t> data;

  const uint8_t* block(int64_t panel, int64_t b) const {
    return data.data() + static_cast<size_t>(panel * kb + b) * block_stride;
  }
  int zero_default() const { return 1 << (bits - 1); }
};

// Packs bits 4/8, any block size that is a multiple of 16, integer or no zero points; fp16
// scales when options ask and quant::scales_fit_fp16(w); reports options.rows_consumed.
PackX16 pack_x16(const QuantizedMatrix& w, const PackOptions& options = {});

// IME kernels apply: RVV VLEN 256, IME usable (probe), weight shape handled.
bool ime_x16_supports(const QuantizedMatrix& w, const CpuFeatures& cpu);

std::unique_ptr<PackedMatMul> make_qgemm_x16_ime(const QuantizedMatrix& w);  // CompInt8
// The same honouring PackOptions (fp16 scales: kernel names "q4x16h...").
std::unique_ptr<PackedMatMul> make_qgemm_x16_ime_opts(const QuantizedMatrix& w, const PackOptions& options);

}  // namespace nbits::kernels::ime
