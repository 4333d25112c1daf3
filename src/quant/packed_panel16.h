// The 16-column panel formats of the RISC-V kernel sets: MatMulNBits weights re-laid out at
// load time in panels of 16 output columns (one vector lane per column at VLEN 256), one
// record per (panel p, K-block b), `block_stride` bytes:
//   scales[16]     float (64 B), or IEEE fp16 (32 B) when scales_fp16
//   uint8 zp[16]   only when has_zp (without: the zero point is 2^(bits-1))
//   codes          bits * block * 2 bytes, in one of two layouts (Panel16Layout):
//     n16 (RVV vector lanes): K-major, one 16-byte row per k (int8) or per k pair (int4: low
//         nibble k, high nibble k+1), byte c = column c;
//     t16 (IME vmadot tiles): column groups of 4 so that one 32-byte load is a vmadot B^T tile
//         (4 columns x 8 k): per 16 k (int4) or 8 k (int8) 128 B = 16 columns x 8 B; int4 byte
//         t = code(k0+t) | code(k0+t+8) << 4 (low nibbles: k0..k0+7, high: k0+8..k0+15).
// Codes stay unsigned. Columns past N have scale 0, code 0 and zero point 0; codes past K are 0.
// lut4 (int8 weights of at most 16 distinct codes and no zero points: the GGUF table types): the
// codes are 4-bit indices into `lut` (the 8-bit codes, ascending), in int4's layout; the zero
// point is 128 as for int8.
// (The x86/arm64 format is another layout with another name: x16, quant/packed_x16.h.)
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/matmul_nbits.h"
#include "quant/packed_x16.h"

namespace nbits::quant {

enum class Panel16Layout { kN16, kT16 };

struct PackedPanel16 {
  Panel16Layout layout = Panel16Layout::kN16;
  int bits = 4;
  int block = 32;
  int64_t N = 0, K = 0;
  int64_t k_blocks = 0;
  int64_t panels = 0;
  bool has_zp = false;
  bool scales_fp16 = false;  // scales stored as IEEE fp16 (32 bytes) rather than float (64)
  bool lut4 = false;         // bits 4: indices into lut
  uint8_t lut[16] = {};      // lut4: the 8-bit codes the indices stand for (unused entries: lut[0])
  size_t zp_offset = 0;      // offset of the zero points in a record (= bytes of scales)
  size_t codes_offset = 0;   // scales (+ zero points)
  size_t block_stride = 0;   // bytes of one (panel, K-block) record
  AlignedBytes data;

  const uint8_t* record(int64_t panel, int64_t b) const {
    return data.data() + static_cast<size_t>(panel * k_blocks + b) * block_stride;
  }
  int default_zp() const { return lut4 ? 128 : 1 << (bits - 1); }
};

// True when `w` can be packed in a 16-column panel layout: bits 4 or 8, a block size that is a
// multiple of 16, integer or no zero points.
bool panel16_packable(const kernels::QuantizedMatrix& w);

// Packs `w` (panel16_packable) in `layout`; fp16 scales when options.fp16_scales and
// scales_fit_fp16(w), or options.exact_fp16_scales and scales_exact_fp16(w); calls options.rows_consumed
// every 256 source rows and at the end. lut4: as lut4 where w is int8 with at most 16 distinct codes and no
// zero points.
PackedPanel16 pack_panel16(const kernels::QuantizedMatrix& w, Panel16Layout layout,
                           const kernels::PackOptions& options = {}, bool lut4 = false);

}  // namespace nbits::quant
