#include "quant/packed_panel16.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <vector>

#include "base/fp16.h"

namespace nbits::quant {

bool panel16_packable(const kernels::QuantizedMatrix& w) {
  return (w.bits == 4 || w.bits == 8) && w.block_size % 16 == 0 && w.zero_points_f == nullptr;
}

PackedPanel16 pack_panel16(const kernels::QuantizedMatrix& w, Panel16Layout layout,
                           const kernels::PackOptions& options, bool lut4) {
  PackedPanel16 p;
  p.layout = layout;
  p.N = w.N;
  p.K = w.K;
  p.k_blocks = w.k_blocks();
  p.bits = w.bits;
  uint8_t index[256] = {};  // lut4: a code's index in p.lut
  if (lut4 && w.bits == 8 && w.zero_points == nullptr) {
    const std::vector<uint8_t> distinct = distinct_codes(w, 16);
    if (!distinct.empty()) {
      p.lut4 = true;
      p.bits = 4;
      std::fill(std::begin(p.lut), std::end(p.lut), distinct[0]);
      std::copy(distinct.begin(), distinct.end(), p.lut);
      for (size_t i = 0; i < distinct.size(); ++i) index[distinct[i]] = static_cast<uint8_t>(i);
    }
  }
  p.block = w.block_size;
  p.panels = (w.N + 15) / 16;
  p.has_zp = w.zero_points != nullptr;
  // fp16 when asked and the scales fit, or when every scale is exactly an fp16 number (GGUF's d,
  // MXFP4's powers of two): the same products, in half the bytes.
  p.scales_fp16 =
      (options.fp16_scales && scales_fit_fp16(w)) || (options.exact_fp16_scales && scales_exact_fp16(w));
  p.zp_offset = p.scales_fp16 ? 32 : 64;
  p.codes_offset = p.zp_offset + (p.has_zp ? 16 : 0);
  p.block_stride = p.codes_offset + static_cast<size_t>(p.block) * p.bits * 2;  // 16 columns
  // Zeroed one panel at a time as the loop reaches it (see AlignedBytes::uninitialized).
  p.data = AlignedBytes::uninitialized(static_cast<size_t>(p.panels * p.k_blocks) * p.block_stride);
  const bool t16 = layout == Panel16Layout::kT16;
  for (int64_t panel = 0; panel < p.panels; ++panel) {
    std::memset(p.data.data() + static_cast<size_t>(panel * p.k_blocks) * p.block_stride, 0,
                static_cast<size_t>(p.k_blocks) * p.block_stride);
    for (int64_t b = 0; b < p.k_blocks; ++b) {
      uint8_t* rec = p.data.data() + static_cast<size_t>(panel * p.k_blocks + b) * p.block_stride;
      uint8_t* codes = rec + p.codes_offset;
      for (int c = 0; c < 16; ++c) {
        const int64_t n = panel * 16 + c;
        if (n >= w.N) break;
        const float s = w.scale(n, b);
        if (p.scales_fp16) {
          const uint16_t h = float_to_fp16(s);
          std::memcpy(rec + 2 * c, &h, 2);
        } else {
          std::memcpy(rec + 4 * c, &s, 4);
        }
        if (p.has_zp) rec[p.zp_offset + c] = static_cast<uint8_t>(w.zero_point(n, b));
        for (int j = 0; j < p.block; ++j) {
          const int64_t k = b * p.block + j;
          if (k >= w.K) break;
          const uint8_t code = p.lut4 ? index[w.code(n, k)] : static_cast<uint8_t>(w.code(n, k));
          if (!t16) {
            if (p.bits == 8)
              codes[j * 16 + c] = code;
            else
              codes[(j / 2) * 16 + c] |= static_cast<uint8_t>(code << ((j & 1) * 4));
          } else if (p.bits == 8) {
            codes[(j / 8) * 128 + c * 8 + j % 8] = code;
          } else {
            const int t = j % 16;  // position inside the 16-k group
            codes[(j / 16) * 128 + c * 8 + t % 8] |= static_cast<uint8_t>(code << (t / 8 * 4));
          }
        }
      }
    }
    if (options.rows_consumed) {  // every 256 source rows and at the end
      const int64_t done = (panel + 1) * 16;
      if (done >= w.N)
        options.rows_consumed(w.N);
      else if (done % 256 == 0)
        options.rows_consumed(done);
    }
  }
  return p;
}

}  // namespace nbits::quant
