#include "kernels/x16_matmul.h"

#include <utility>

namespace nbits::kernels {
namespace {

// Half-precision scales when asked, or when they are exact (then no result changes).
bool fp16_scales(const QuantizedMatrix& w, const PackOptions& options) {
  return options.fp16_scales || (options.exact_fp16_scales && quant::scales_exact_fp16(w));
}

}  // namespace

std::unique_ptr<PackedMatMul> make_x16_int8(const QuantizedMatrix& w, const X16Int8Kernels& k) {
  return make_panel_int8(quant::pack_x16(w), k);
}

std::unique_ptr<PackedMatMul> make_x16_fp32(const QuantizedMatrix& w, const X16Fp32Kernels& k) {
  return make_panel_fp32(quant::pack_x16(w), k);
}

std::unique_ptr<PackedMatMul> make_x16_int8(const QuantizedMatrix& w, const PackOptions& options,
                                            const X16Int8Kernels& k32, const X16Int8Kernels& k16,
                                            bool fold_uniform_zp) {
  quant::PackedX16 p =
      quant::pack_x16(w, fp16_scales(w, options), options.rows_consumed, options.pool, fold_uniform_zp);
  const X16Int8Kernels& k = p.scales_fp16 ? k16 : k32;
  return make_panel_int8(std::move(p), k);
}

std::unique_ptr<PackedMatMul> make_x16_int8(const QuantizedMatrix& w, const PackOptions& options,
                                            X16Int8Kernels (*pick)(const quant::PackedX16&),
                                            bool fold_uniform_zp, bool int5) {
  quant::PackedX16 p = quant::pack_x16(w, fp16_scales(w, options), options.rows_consumed, options.pool,
                                       fold_uniform_zp, int5, options.super_scales, options.int6);
  const X16Int8Kernels k = pick(p);
  return make_panel_int8(std::move(p), k);
}

std::unique_ptr<PackedMatMul> make_x16_fp32(const QuantizedMatrix& w, const PackOptions& options,
                                            const X16Fp32Kernels& k32, const X16Fp32Kernels& k16) {
  quant::PackedX16 p = quant::pack_x16(w, fp16_scales(w, options), options.rows_consumed, options.pool);
  const X16Fp32Kernels& k = p.scales_fp16 ? k16 : k32;
  return make_panel_fp32(std::move(p), k);
}

}  // namespace nbits::kernels
