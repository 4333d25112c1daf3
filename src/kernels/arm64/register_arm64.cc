// The arm64 kernel sets on x16 panels (quant/packed_x16.h), most preferred first:
//   x16_i8mm_int8    M = 1 SDOT GEMV, M >= 2 SMMLA GEMM      (HWCAP_ASIMDDP + HWCAP2_I8MM)
//   x16_dotprod_int8 M = 1 SDOT GEMV, M >= 2 SDOT 4x8 GEMM   (HWCAP_ASIMDDP)
//   x16_neon_int8    the same dots with SMULL (ARMv8.0)      (HWCAP_ASIMD)
//   x16_neon_fp32    CompFp32, FMLA                          (HWCAP_ASIMD)
// All quantize activations with quantize_row_blocks_neon and plug into the x16 driver. The int8
// sets read int4 / int8 panels, and lut4 panels (int8 weights of at most 16 codes, no zero points).
#include "kernels/arm64/register_arm64.h"

#include "base/error.h"
#include "kernels/arm64/x16_arm64.h"
#include "kernels/x16_matmul.h"

namespace nbits::kernels {
namespace {

bool neon_ok(const QuantizedMatrix& w, const CpuFeatures& cpu) { return cpu.neon && quant::x16_packable(w); }
bool dotprod_ok(const QuantizedMatrix& w, const CpuFeatures& cpu) { return cpu.dotprod && neon_ok(w, cpu); }
bool i8mm_ok(const QuantizedMatrix& w, const CpuFeatures& cpu) { return cpu.i8mm && dotprod_ok(w, cpu); }

enum class Level { kNeon, kDotprod, kI8mm };

// Kernel names: "h" after the format marks fp16 scales (q4x16h).
template <Level L, bool kAsym, bool kF16>
X16Int8Kernels int8_kernels(int bits) {
  if constexpr (L == Level::kNeon) {
    if (bits == 4)
      return {kF16 ? "qgemv_q4x16h_neon" : "qgemv_q4x16_neon",
              kF16 ? "qgemm_q4x16h_4x8_neon" : "qgemm_q4x16_4x8_neon", quantize_row_blocks_neon,
              qgemv_q4x16_neon<kAsym, kF16>, qgemm_q4x16_4x8_neon<kAsym, kF16>};
    return {kF16 ? "qgemv_q8x16h_neon" : "qgemv_q8x16_neon",
            kF16 ? "qgemm_q8x16h_4x8_neon" : "qgemm_q8x16_4x8_neon", quantize_row_blocks_neon,
            qgemv_q8x16_neon<kAsym, kF16>, qgemm_q8x16_4x8_neon<kAsym, kF16>};
  } else if constexpr (L == Level::kDotprod) {
    if (bits == 4)
      return {kF16 ? "qgemv_q4x16h_dotprod" : "qgemv_q4x16_dotprod",
              kF16 ? "qgemm_q4x16h_4x8_dotprod" : "qgemm_q4x16_4x8_dotprod", quantize_row_blocks_neon,
              qgemv_q4x16_dotprod<kAsym, kF16>, qgemm_q4x16_4x8_dotprod<kAsym, kF16>};
    return {kF16 ? "qgemv_q8x16h_dotprod" : "qgemv_q8x16_dotprod",
            kF16 ? "qgemm_q8x16h_4x8_dotprod" : "qgemm_q8x16_4x8_dotprod", quantize_row_blocks_neon,
            qgemv_q8x16_dotprod<kAsym, kF16>, qgemm_q8x16_4x8_dotprod<kAsym, kF16>};
  } else {
    if (bits == 4)
      return {kF16 ? "qgemv_q4x16h_dotprod" : "qgemv_q4x16_dotprod",
              kF16 ? "qgemm_q4x16h_4x8_i8mm" : "qgemm_q4x16_4x8_i8mm", quantize_row_blocks_neon,
              qgemv_q4x16_dotprod<kAsym, kF16>, qgemm_q4x16_4x8_i8mm<kAsym, kF16>};
    return {kF16 ? "qgemv_q8x16h_dotprod" : "qgemv_q8x16_dotprod",
            kF16 ? "qgemm_q8x16h_4x8_i8mm" : "qgemm_q8x16_4x8_i8mm", quantize_row_blocks_neon,
            qgemv_q8x16_dotprod<kAsym, kF16>, qgemm_q8x16_4x8_i8mm<kAsym, kF16>};
  }
}

// lut4 panels (no zero points): the int4 bodies through the weight's table.
template <Level L, bool kF16>
X16Int8Kernels lut4_kernels() {
  if constexpr (L == Level::kNeon)
    return {kF16 ? "qgemv_q4lx16h_neon" : "qgemv_q4lx16_neon",
            kF16 ? "qgemm_q4lx16h_4x8_neon" : "qgemm_q4lx16_4x8_neon", quantize_row_blocks_neon,
            qgemv_q4lx16_neon<kF16>, qgemm_q4lx16_4x8_neon<kF16>};
  else if constexpr (L == Level::kDotprod)
    return {kF16 ? "qgemv_q4lx16h_dotprod" : "qgemv_q4lx16_dotprod",
            kF16 ? "qgemm_q4lx16h_4x8_dotprod" : "qgemm_q4lx16_4x8_dotprod", quantize_row_blocks_neon,
            qgemv_q4lx16_dotprod<kF16>, qgemm_q4lx16_4x8_dotprod<kF16>};
  else
    return {kF16 ? "qgemv_q4lx16h_dotprod" : "qgemv_q4lx16_dotprod",
            kF16 ? "qgemm_q4lx16h_4x8_i8mm" : "qgemm_q4lx16_4x8_i8mm", quantize_row_blocks_neon,
            qgemv_q4lx16_dotprod<kF16>, qgemm_q4lx16_4x8_i8mm<kF16>};
}

// Level L's kernels for a packed weight without zero points: plain int4 / int8 or lut4 panels.
template <Level L>
X16Int8Kernels int8_kernels_for(const quant::PackedX16& p) {
  NBITS_CHECK(
      p.super_blocks == 0 && !p.has_mins && !p.has_zp && p.default_zp() == (p.bits == 4 && !p.lut4 ? 8 : 128),
      "arm64: a packed format its kernels do not read");
  if (p.lut4) return p.scales_fp16 ? lut4_kernels<L, true>() : lut4_kernels<L, false>();
  return p.scales_fp16 ? int8_kernels<L, false, true>(p.bits) : int8_kernels<L, false, false>(p.bits);
}

NBITS_X16_FP32_SET(neon, 6x16)

template <Level L>
std::unique_ptr<PackedMatMul> pack_int8_with(const QuantizedMatrix& w, const PackOptions& o) {
  if (w.zero_points != nullptr)
    return make_x16_int8(w, o, int8_kernels<L, true, false>(w.bits), int8_kernels<L, true, true>(w.bits));
  // Without zero points int8 weights of at most 16 distinct codes pack as lut4 (the GGUF 4-bit
  // table types: half the bytes of their 8-bit codes). Super-block scales and int6 are x86 formats.
  PackOptions plain = o;
  plain.super_scales = false;
  plain.int6 = false;
  return make_x16_int8(w, plain, int8_kernels_for<L>, /*fold_uniform_zp=*/false, /*int5=*/false,
                       lut4_panels_enabled());
}

template <Level L>
std::unique_ptr<PackedMatMul> pack_int8(const QuantizedMatrix& w) {
  return pack_int8_with<L>(w, {});
}

std::unique_ptr<PackedMatMul> pack_fp32_with(const QuantizedMatrix& w, const PackOptions& o) {
  if (w.zero_points != nullptr)
    return make_x16_fp32(w, o, neon_fp32<true, false>(w.bits), neon_fp32<true, true>(w.bits));
  return make_x16_fp32(w, o, neon_fp32<false, false>(w.bits), neon_fp32<false, true>(w.bits));
}

std::unique_ptr<PackedMatMul> pack_fp32(const QuantizedMatrix& w) { return pack_fp32_with(w, {}); }

// The int8 micro-kernels of every arm64 level this CPU runs, for packed weight p: candidates of
// the measured choice (x16_matmul.h, kernels/kernel_choice.h). The three levels read one format
// (int4 / int8 codes, fp32 or fp16 scales) and compute the same exact int32 dots, so they are
// bit-exact to each other; which wins a role depends on the core (a little core's SDOT, a big
// core's SMMLA).
template <bool kAsym, bool kF16>
void arm64_int8_sets(const quant::PackedX16& p, const CpuFeatures& cpu, std::vector<X16Int8Kernels>& r) {
  if (cpu.i8mm && cpu.dotprod) r.push_back(int8_kernels<Level::kI8mm, kAsym, kF16>(p.bits));
  if (cpu.dotprod) r.push_back(int8_kernels<Level::kDotprod, kAsym, kF16>(p.bits));
  if (cpu.neon) r.push_back(int8_kernels<Level::kNeon, kAsym, kF16>(p.bits));
}

std::vector<X16Int8Kernels> arm64_int8_alternatives(const quant::PackedX16& p) {
  std::vector<X16Int8Kernels> r;
  // Block mins, super-block scales, int5 / int6: formats only the x86 sets pack and read.
  if (p.super_blocks > 0 || p.has_mins || (!p.plain() && !p.lut4)) return r;
  const CpuFeatures& cpu = cpu_features();
  if (p.lut4) {
    if (cpu.i8mm && cpu.dotprod) r.push_back(int8_kernels_for<Level::kI8mm>(p));
    if (cpu.dotprod) r.push_back(int8_kernels_for<Level::kDotprod>(p));
    if (cpu.neon) r.push_back(int8_kernels_for<Level::kNeon>(p));
    return r;
  }
  if (p.has_zp)
    p.scales_fp16 ? arm64_int8_sets<true, true>(p, cpu, r) : arm64_int8_sets<true, false>(p, cpu, r);
  else
    p.scales_fp16 ? arm64_int8_sets<false, true>(p, cpu, r) : arm64_int8_sets<false, false>(p, cpu, r);
  return r;
}

}  // namespace

void register_arm64_matmul_nbits(std::vector<MatMulNBitsKernel>& t) {
  set_x16_int8_alternatives(arm64_int8_alternatives);
  t.push_back(
      {"x16_i8mm_int8", Compute::kInt8, i8mm_ok, pack_int8<Level::kI8mm>, pack_int8_with<Level::kI8mm>});
  t.push_back({"x16_dotprod_int8", Compute::kInt8, dotprod_ok, pack_int8<Level::kDotprod>,
               pack_int8_with<Level::kDotprod>});
  t.push_back(
      {"x16_neon_int8", Compute::kInt8, neon_ok, pack_int8<Level::kNeon>, pack_int8_with<Level::kNeon>});
  t.push_back({"x16_neon_fp32", Compute::kFp32, neon_ok, pack_fp32, pack_fp32_with});
}

}  // namespace nbits::kernels
