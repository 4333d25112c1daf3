// The x86/arm64 kernel sets' entry to the panel driver (kernels/panel_matmul.h) on x16-packed
// weights (quant/packed_x16.h): the micro-kernel tables and the pack-and-wrap calls.
#pragma once

#include <memory>
#include <vector>

#include "kernels/panel_matmul.h"
#include "quant/packed_x16.h"

namespace nbits::kernels {

using X16Int8Kernels = PanelInt8Kernels<quant::PackedX16>;
using X16Fp32Kernels = PanelFp32Kernels<quant::PackedX16>;

// Defines isa_fp32<kAsym, kF16>(bits): the CompFp32 set of fgemv_q{4,8}x16_<isa> and
// fgemm_q{4,8}x16_<tile>_<isa>, named with "h" after the format for fp16 scales.
#define NBITS_X16_FP32_SET(isa, tile)                                                   \
  template <bool kAsym, bool kF16>                                                      \
  X16Fp32Kernels isa##_fp32(int bits) {                                                 \
    if (bits == 4)                                                                      \
      return {kF16 ? "fgemv_q4x16h_" #isa : "fgemv_q4x16_" #isa,                        \
              kF16 ? "fgemm_q4x16h_" #tile "_" #isa : "fgemm_q4x16_" #tile "_" #isa,    \
              fgemv_q4x16_##isa<kAsym, kF16>, fgemm_q4x16_##tile##_##isa<kAsym, kF16>}; \
    return {kF16 ? "fgemv_q8x16h_" #isa : "fgemv_q8x16_" #isa,                          \
            kF16 ? "fgemm_q8x16h_" #tile "_" #isa : "fgemm_q8x16_" #tile "_" #isa,      \
            fgemv_q8x16_##isa<kAsym, kF16>, fgemm_q8x16_##tile##_##isa<kAsym, kF16>};   \
  }

// Other kernel sets' micro-kernels that can run packed weight `p`, bit-exact to each other: the
// candidates of the measured choice (PackOptions::kernel_choice). The architecture registers its
// provider once, with its kernel table (x86: the AVX2, AVX-VNNI and AVX-512 VNNI sets, zmm and ymm).
using X16Int8Alternatives = std::vector<X16Int8Kernels> (*)(const quant::PackedX16& p);
void set_x16_int8_alternatives(X16Int8Alternatives provider);
// The registered provider's candidates for p (none where no provider is registered).
std::vector<X16Int8Kernels> x16_int8_alternatives(const quant::PackedX16& p);
// `own` (the packing set's micro-kernels), or per role (GEMV, GEMM) the fastest of `own` and the
// registered alternatives on p, timed once per format (kernels/kernel_choice.h).
X16Int8Kernels choose_x16_int8(const quant::PackedX16& p, const X16Int8Kernels& own);

// Packs `w` as x16 and wraps it with the given micro-kernels.
std::unique_ptr<PackedMatMul> make_x16_int8(const QuantizedMatrix& w, const X16Int8Kernels& k);
std::unique_ptr<PackedMatMul> make_x16_fp32(const QuantizedMatrix& w, const X16Fp32Kernels& k);
// The same honouring `options`: fp16 scales (when asked and the scales fit,
// quant::scales_fit_fp16) run on `k16`, float scales on `k32`. fold_uniform_zp:
// see quant::pack_x16 (for micro-kernels that read PackedX16::default_zp()).
std::unique_ptr<PackedMatMul> make_x16_int8(const QuantizedMatrix& w, const PackOptions& options,
                                            const X16Int8Kernels& k32, const X16Int8Kernels& k16,
                                            bool fold_uniform_zp = false);
std::unique_ptr<PackedMatMul> make_x16_fp32(const QuantizedMatrix& w, const PackOptions& options,
                                            const X16Fp32Kernels& k32, const X16Fp32Kernels& k16);
// The same with the micro-kernels chosen from the packed weight (its scale format, its codes' span);
// int5 and lut4: see quant::pack_x16; PackOptions::super_scales and int6 are honoured.
std::unique_ptr<PackedMatMul> make_x16_int8(const QuantizedMatrix& w, const PackOptions& options,
                                            X16Int8Kernels (*pick)(const quant::PackedX16&),
                                            bool fold_uniform_zp = false, bool int5 = false,
                                            bool lut4 = false);

}  // namespace nbits::kernels
