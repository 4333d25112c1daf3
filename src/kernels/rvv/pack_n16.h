// "N16" packed weights for the RVV kernels: panels of 16 output columns (one column per
// vector lane at VLEN 256, e8/mf2), K-major inside a panel so one 16-byte load gives the
// codes of 16 columns at one k (int8) or at a k pair (int4: low nibble k, high nibble k+1).
//
// Per (panel p, block b) record, `block_stride` bytes:
//   scales[16] (float, or IEEE fp16 when scales_fp16) | uint8_t zp[16] (only if has_zp) |
//   codes: int4 bs/2 x 16 B, int8 bs x 16 B
// Columns past N have scale 0, code 0, zero point 0. Codes past K are 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/matmul_nbits.h"

namespace nbits::kernels::rvv {

struct PackN16 {
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
PackN16 pack_n16(const QuantizedMatrix& w, const PackOptions& options = {});

// Whether the RVV kernels handle this weight on this CPU (RVV 1.0 with VLEN 256).
bool rvv_n16_supports(const QuantizedMatrix& w, const CpuFeatures& cpu);

std::unique_ptr<PackedMatMul> make_qgemm_n16_rvv(const QuantizedMatrix& w);      // CompInt8
std::unique_ptr<PackedMatMul> make_gemm_n16_fp32_rvv(const QuantizedMatrix& w);  // CompFp32
// The same honouring PackOptions (fp16 scales: kernel names "q4n16h...").
std::unique_ptr<PackedMatMul> make_qgemm_n16_rvv_opts(const QuantizedMatrix& w, const PackOptions& options);
std::unique_ptr<PackedMatMul> make_gemm_n16_fp32_rvv_opts(const QuantizedMatrix& w,
                                                          const PackOptions& options);

}  // namespace nbits::kernels::rvv
