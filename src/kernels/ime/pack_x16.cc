#include "kernels/ime/pack_x16.h"

#include <cstring>

#include "kernels/ime/ime_probe.h"
#include "kernels/rvv/panel_scales.h"
#include "quant/packed_x16.h"

namespace nbits::kernels::ime {

bool ime_x16_supports(const QuantizedMatrix& w, const CpuFeatures& cpu) {
#if defined(__riscv_v_intrinsic)
  return cpu.rvv && cpu.vlen_bits == 256 && (w.bits == 4 || w.bits == 8) && w.block_size % 16 == 0 &&
         w.zero_points_f == nullptr && ime_usable();
#else
  (void)w;
  (void)cpu;
  return false;
#endif
}

PackX16 pack_x16(const QuantizedMatrix& w, const PackOptions& options) {
  PackX16 p;
  p.N = w.N;
  p.K = w.K;
  p.kb = w.k_blocks();
  p.bits = w.bits;
  p.bs = w.block_size;
  p.panels = (w.N + 15) / 16;
  p.has_zp = w.zero_points != nullptr;
  p.scales_fp16 = options.fp16_scales && quant::scales_fit_fp16(w);
  p.zp_offset = rvv::scale_bytes(p.scales_fp16);
  p.codes_offset = p.zp_offset + (p.has_zp ? 16 : 0);
  p.block_stride = p.codes_offset + static_cast<size_t>(p.bs) * w.bits * 2;  // 16 columns
  p.data.assign(static_cast<size_t>(p.panels * p.kb) * p.block_stride, 0);
  for (int64_t panel = 0; panel < p.panels; ++panel) {
    for (int64_t b = 0; b < p.kb; ++b) {
      uint8_t* rec = p.data.data() + static_cast<size_t>(panel * p.kb + b) * p.block_stride;
      uint8_t* codes = rec + p.codes_offset;
      for (int c = 0; c < 16; ++c) {
        const int64_t n = panel * 16 + c;
        if (n >= w.N) break;
        rvv::store_scale(rec, c, w.scale(n, b), p.scales_fp16);
        if (p.has_zp) rec[p.zp_offset + c] = static_cast<uint8_t>(w.zero_point(n, b));
        for (int j = 0; j < p.bs; ++j) {
          const int64_t k = b * p.bs + j;
          if (k >= w.K) break;
          const uint8_t code = static_cast<uint8_t>(w.code(n, k));
          if (w.bits == 8) {
            codes[(j / 8) * 128 + c * 8 + j % 8] = code;
          } else {
            const int t = j % 16;  // position inside the 16-k group
            codes[(j / 16) * 128 + c * 8 + t % 8] |= static_cast<uint8_t>(code << (t / 8 * 4));
          }
        }
      }
    }
    rvv::report_rows(options, panel, w.N);
  }
  return p;
}

}  // namespace nbits::kernels::ime
