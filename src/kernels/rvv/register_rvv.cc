// The RISC-V kernel sets, most preferred first: IME (cores that passed the vmadot probe) on t16
// panels, then plain RVV on n16 panels (quant/packed_panel16.h). All run on the panel driver
// (kernels/panel_matmul.h) and honour PackOptions (fp16 scales: kernel names "q4t16h...",
// "q4n16h...", and rows_consumed). The int8 sets pack int8 weights of at most 16 codes without zero
// points (GGUF MXFP4, IQ4_NL / IQ4_XS, the IQ lattices) as lut4 ("q4ln16", "q4lt16").
#include "kernels/rvv/register_rvv.h"

#include <memory>
#include <utility>

#include "kernels/ime/ime_probe.h"
#include "kernels/ime/t16_ime.h"
#include "kernels/ime/vmadot.h"
#include "kernels/panel_matmul.h"
#include "kernels/rvv/n16_rvv.h"
#include "kernels/rvv/quantize_a_rvv.h"
#include "quant/packed_panel16.h"

namespace nbits::kernels {

#if defined(__riscv_v_intrinsic)
namespace {

using quant::PackedPanel16;
using quant::Panel16Layout;

bool rvv_ok(const QuantizedMatrix& w, const CpuFeatures& cpu) {
  return cpu.rvv && cpu.vlen_bits == 256 && quant::panel16_packable(w);
}

// Kernel names: "h" after the format marks fp16 scales (q4n16h); "q4l": lut4 panels.
template <bool H>
PanelInt8Kernels<PackedPanel16> rvv_int8(int bits, bool lut4) {
  if (lut4)
    return {H ? "qgemv_q4ln16h_rvv" : "qgemv_q4ln16_rvv",
            H ? "qgemm_q4ln16h_4x16_rvv" : "qgemm_q4ln16_4x16_rvv", rvv::quantize_row_blocks_rvv,
            rvv::qgemv_n16_rvv<H>, rvv::qgemm_n16_rvv<H>};
  if (bits == 4)
    return {H ? "qgemv_q4n16h_rvv" : "qgemv_q4n16_rvv", H ? "qgemm_q4n16h_4x16_rvv" : "qgemm_q4n16_4x16_rvv",
            rvv::quantize_row_blocks_rvv, rvv::qgemv_n16_rvv<H>, rvv::qgemm_n16_rvv<H>};
  return {H ? "qgemv_q8n16h_rvv" : "qgemv_q8n16_rvv", H ? "qgemm_q8n16h_4x16_rvv" : "qgemm_q8n16_4x16_rvv",
          rvv::quantize_row_blocks_rvv, rvv::qgemv_n16_rvv<H>, rvv::qgemm_n16_rvv<H>};
}

template <bool H>
PanelFp32Kernels<PackedPanel16> rvv_fp32(int bits) {
  if (bits == 4)
    return {H ? "gemv_q4n16h_fp32_rvv" : "gemv_q4n16_fp32_rvv",
            H ? "gemm_q4n16h_4x16_fp32_rvv" : "gemm_q4n16_4x16_fp32_rvv", rvv::fgemv_n16_rvv<H>,
            rvv::fgemm_n16_rvv<H>};
  return {H ? "gemv_q8n16h_fp32_rvv" : "gemv_q8n16_fp32_rvv",
          H ? "gemm_q8n16h_4x16_fp32_rvv" : "gemm_q8n16_4x16_fp32_rvv", rvv::fgemv_n16_rvv<H>,
          rvv::fgemm_n16_rvv<H>};
}

std::unique_ptr<PackedMatMul> pack_rvv_int8_with(const QuantizedMatrix& w, const PackOptions& o) {
  PackedPanel16 p = quant::pack_panel16(w, Panel16Layout::kN16, o, lut4_panels_enabled());
  const PanelInt8Kernels<PackedPanel16> k =
      p.scales_fp16 ? rvv_int8<true>(p.bits, p.lut4) : rvv_int8<false>(p.bits, p.lut4);
  return make_panel_int8(std::move(p), k);
}

std::unique_ptr<PackedMatMul> pack_rvv_fp32_with(const QuantizedMatrix& w, const PackOptions& o) {
  PackedPanel16 p = quant::pack_panel16(w, Panel16Layout::kN16, o);
  const PanelFp32Kernels<PackedPanel16> k = p.scales_fp16 ? rvv_fp32<true>(p.bits) : rvv_fp32<false>(p.bits);
  return make_panel_fp32(std::move(p), k);
}

std::unique_ptr<PackedMatMul> pack_rvv_int8(const QuantizedMatrix& w) { return pack_rvv_int8_with(w, {}); }
std::unique_ptr<PackedMatMul> pack_rvv_fp32(const QuantizedMatrix& w) { return pack_rvv_fp32_with(w, {}); }

#if defined(NBITS_HAVE_IME_KERNELS)
bool ime_ok(const QuantizedMatrix& w, const CpuFeatures& cpu) { return rvv_ok(w, cpu) && ime::ime_usable(); }

template <bool H>
PanelInt8Kernels<PackedPanel16> ime_int8(int bits, bool lut4) {
  PanelInt8Kernels<PackedPanel16> k{};
  if (lut4) {
    k.gemv_name = H ? "qgemv_q4lt16h_ime" : "qgemv_q4lt16_ime";
    k.gemm_name = H ? "qgemm_q4lt16h_4x16_ime" : "qgemm_q4lt16_4x16_ime";
  } else if (bits == 4) {
    k.gemv_name = H ? "qgemv_q4t16h_ime" : "qgemv_q4t16_ime";
    k.gemm_name = H ? "qgemm_q4t16h_4x16_ime" : "qgemm_q4t16_4x16_ime";
  } else {
    k.gemv_name = H ? "qgemv_q8t16h_ime" : "qgemv_q8t16_ime";
    k.gemm_name = H ? "qgemm_q8t16h_4x16_ime" : "qgemm_q8t16_4x16_ime";
  }
  k.quantize = rvv::quantize_row_blocks_rvv;
  k.gemv = ime::qgemv_t16_ime<H>;
  k.gemm = ime::qgemm_t16_ime<H>;
  k.tiles_bytes = ime::tiles_bytes_t16;
  k.tile_row = ime::tile_row_t16;
  return k;
}

std::unique_ptr<PackedMatMul> pack_ime_int8_with(const QuantizedMatrix& w, const PackOptions& o) {
  PackedPanel16 p = quant::pack_panel16(w, Panel16Layout::kT16, o, lut4_panels_enabled());
  const PanelInt8Kernels<PackedPanel16> k =
      p.scales_fp16 ? ime_int8<true>(p.bits, p.lut4) : ime_int8<false>(p.bits, p.lut4);
  return make_panel_int8(std::move(p), k);
}

std::unique_ptr<PackedMatMul> pack_ime_int8(const QuantizedMatrix& w) { return pack_ime_int8_with(w, {}); }
#endif

}  // namespace
#endif

void register_rvv_matmul_nbits(std::vector<MatMulNBitsKernel>& table) {
#if defined(__riscv_v_intrinsic)
#if defined(NBITS_HAVE_IME_KERNELS)
  table.push_back({"t16_ime_int8", Compute::kInt8, ime_ok, pack_ime_int8, pack_ime_int8_with});
#endif
  table.push_back({"n16_rvv_int8", Compute::kInt8, rvv_ok, pack_rvv_int8, pack_rvv_int8_with});
  table.push_back({"n16_rvv_fp32", Compute::kFp32, rvv_ok, pack_rvv_fp32, pack_rvv_fp32_with});
#else
  (void)table;
#endif
}

}  // namespace nbits::kernels
