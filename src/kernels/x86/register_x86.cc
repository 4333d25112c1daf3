#include "kernels/x86/register_x86.h"

#include <cstdlib>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "base/error.h"
#include "kernels/x16_matmul.h"
#include "kernels/x86/built_sets.h"
#include "kernels/x86/x16_amx.h"
#include "kernels/x86/x16_avx2.h"
#include "kernels/x86/x16_fp32_avx512.h"
#include "kernels/x86/x16_vnni.h"

namespace nbits::kernels {
namespace {

bool avx2_ok(const QuantizedMatrix& w, const CpuFeatures& cpu) {
  return cpu.avx2 && cpu.fma && cpu.f16c && quant::x16_packable(w);
}

#if NBITS_X86_AVX512 || NBITS_X86_AVX512VNNI
bool avx512_ok(const QuantizedMatrix& w, const CpuFeatures& cpu) {
  return cpu.avx512f && cpu.avx512bw && cpu.avx512vl && cpu.avx512dq && avx2_ok(w, cpu);
}
#endif

#if NBITS_X86_AVX512VNNI || NBITS_X86_AVXVNNI
// The VNNI tiles (x16_vnni_tile_inl.h) have no form for mins together with zero points that are
// not all equal: no format makes such a weight (GGUF's mins come with none, or with uniform ones
// that are folded), and leaving that form out saves a quarter of those files' compile time. The
// AVX2 set takes such a weight.
bool vnni_tiles_take(const QuantizedMatrix& w) {
  return w.mins == nullptr || w.zero_points == nullptr || quant::uniform_zero_point(w) >= 0;
}
#endif

#if NBITS_X86_AVX512VNNI
bool avx512vnni_ok(const QuantizedMatrix& w, const CpuFeatures& cpu) {
  return cpu.avx512vnni && avx512_ok(w, cpu) && vnni_tiles_take(w);
}
#endif

#if NBITS_X86_AVXVNNI
bool avxvnni_ok(const QuantizedMatrix& w, const CpuFeatures& cpu) {
  return cpu.avx_vnni && avx2_ok(w, cpu) && vnni_tiles_take(w);
}
#endif

#if NBITS_X86_AMX
// AMX: no zero points, or all equal (folded into default_zp(): GGUF Q4_1 / Q4_K with their mins);
// an int8 weight's codes minus the zero point must fit int8 (zero point 128).
bool amx_ok(const QuantizedMatrix& w, const CpuFeatures& cpu) {
  if (!(cpu.amx_int8 && avx512vnni_ok(w, cpu))) return false;
  const int zp = w.zero_points == nullptr ? 1 << (w.bits - 1) : quant::uniform_zero_point(w);
  return zp >= 0 && (w.bits == 4 || zp == 128);
}
#endif

// Kernel names: "h" after the format marks fp16 scales (q4x16h), "k" super-block scales (q4x16k:
// GGUF's K-quants at about the file's size).
constexpr const char* kScTag[3] = {"", "h", "k"};

template <bool kAsym, int kSc>
X16Int8Kernels avx2_int8(int bits) {
  static const std::string names[4] = {std::string("qgemv_q4x16") + kScTag[kSc] + "_avx2",
                                       std::string("qgemm_q4x16") + kScTag[kSc] + "_4x16_avx2",
                                       std::string("qgemv_q8x16") + kScTag[kSc] + "_avx2",
                                       std::string("qgemm_q8x16") + kScTag[kSc] + "_4x8_avx2"};
  if (bits == 4)
    return {names[0].c_str(), names[1].c_str(), quantize_row_blocks_avx2, qgemv_q4x16_avx2<kAsym, kSc>,
            qgemm_q4x16_4x16_avx2<kAsym, kSc>};
  return {names[2].c_str(), names[3].c_str(), quantize_row_blocks_avx2, qgemv_q8x16_avx2<kAsym, kSc>,
          qgemm_q8x16_4x8_avx2<kAsym, kSc>};
}

// AVX2 on int8 codes of a narrow span (x16_avx2.h's q8n kernels): the named GEMV and GEMM.
template <int kSpanBits, bool kAsym, int kSc>
X16Int8Kernels avx2_q8n_int8() {
  static const std::string gemv = "qgemv_q8n" + std::to_string(kSpanBits) + "x16" + kScTag[kSc] + "_avx2",
                           gemm =
                               "qgemm_q8n" + std::to_string(kSpanBits) + "x16" + kScTag[kSc] + "_4x16_avx2";
  return {gemv.c_str(), gemm.c_str(), quantize_row_blocks_avx2, qgemv_q8nx16_avx2<kSpanBits, kAsym, kSc>,
          qgemm_q8nx16_4x16_avx2<kSpanBits, kAsym, kSc>};
}

// The int5 / int6 kernels (Bits 5 or 6).
template <int Bits, bool kAsym, int kSc>
X16Int8Kernels avx2_q56_int8() {
  static const std::string gemv = "qgemv_q" + std::to_string(Bits) + "x16" + kScTag[kSc] + "_avx2",
                           gemm = "qgemm_q" + std::to_string(Bits) + "x16" + kScTag[kSc] + "_4x16_avx2";
  if constexpr (Bits == 5)
    return {gemv.c_str(), gemm.c_str(), quantize_row_blocks_avx2, qgemv_q5x16_avx2<kAsym, kSc>,
            qgemm_q5x16_4x16_avx2<kAsym, kSc>};
  return {gemv.c_str(), gemm.c_str(), quantize_row_blocks_avx2, qgemv_q6x16_avx2<kAsym, kSc>,
          qgemm_q6x16_4x16_avx2<kAsym, kSc>};
}

// lut4 panels (GGUF MXFP4 / NVFP4, IQ4 and the IQ lattices at 4 bits; no stored zero points).
template <int kSc>
X16Int8Kernels avx2_lut4_int8() {
  static const std::string gemv = std::string("qgemv_q4lx16") + kScTag[kSc] + "_avx2",
                           gemm = std::string("qgemm_q4lx16") + kScTag[kSc] + "_4x16_avx2";
  return {gemv.c_str(), gemm.c_str(), quantize_row_blocks_avx2, qgemv_q4lx16_avx2<kSc>,
          qgemm_q4lx16_4x16_avx2<kSc>};
}

// The AVX2 kernels for a packed weight in scale format kSc: lut4 / int5 / int6 panels their kernels; int8
// codes that span at most 7 bits (GGUF's 5- and 6-bit types when not packed narrow) take the q8n kernels (no
// sign trick, int16 sums: about 2x the int8 kernels' MACs per cycle), others the int4 / int8 kernels above.
template <bool kAsym, int kSc>
X16Int8Kernels avx2_int8_sc(const quant::PackedX16& p) {
  if (p.lut4) {
    NBITS_CHECK(!kAsym && !p.has_zp, "a lut4 weight with stored zero points");
    return avx2_lut4_int8<kSc>();
  }
  if (p.bits == 5) return avx2_q56_int8<5, kAsym, kSc>();
  if (p.bits == 6) return avx2_q56_int8<6, kAsym, kSc>();
  if (p.bits == 8) {
    switch (p.code_span_bits()) {
      case 0:
      case 1:
      case 2:
      case 3:
      case 4:
      case 5:
        return avx2_q8n_int8<5, kAsym, kSc>();
      case 6:
        return avx2_q8n_int8<6, kAsym, kSc>();
      case 7:
        return avx2_q8n_int8<7, kAsym, kSc>();
      default:
        break;
    }
  }
  return avx2_int8<kAsym, kSc>(p.bits);
}

template <bool kAsym>
X16Int8Kernels avx2_int8_for(const quant::PackedX16& p) {
  if (p.super_blocks > 0) return avx2_int8_sc<kAsym, 2>(p);
  return p.scales_fp16 ? avx2_int8_sc<kAsym, 1>(p) : avx2_int8_sc<kAsym, 0>(p);
}

// The VNNI sets (x16_vnni.h): kernel names carry the GEMM tile (rows x columns).
#define NBITS_X16_VNNI_SET(isa, tile)                                                                        \
  template <bool kAsym, bool kF16>                                                                           \
  X16Int8Kernels isa##_int8(int bits) {                                                                      \
    if (bits == 4)                                                                                           \
      return {kF16 ? "qgemv_q4x16h_" #isa : "qgemv_q4x16_" #isa,                                             \
              kF16 ? "qgemm_q4x16h_" tile "_" #isa : "qgemm_q4x16_" tile "_" #isa, quantize_row_blocks_avx2, \
              qgemv_q4x16_##isa<kAsym, kF16>, qgemm_q4x16_##isa<kAsym, kF16>};                               \
    return {kF16 ? "qgemv_q8x16h_" #isa : "qgemv_q8x16_" #isa,                                               \
            kF16 ? "qgemm_q8x16h_" tile "_" #isa : "qgemm_q8x16_" tile "_" #isa, quantize_row_blocks_avx2,   \
            qgemv_q8x16_##isa<kAsym, kF16>, qgemm_q8x16_##isa<kAsym, kF16>};                                 \
  }
#if NBITS_X86_AVX512VNNI
NBITS_X16_VNNI_SET(avx512vnni, "6x32")
NBITS_X16_VNNI_SET(ymm_avx512vnni, "6x16")
#endif
#if NBITS_X86_AVXVNNI
NBITS_X16_VNNI_SET(avxvnni, "4x16")
#endif
#undef NBITS_X16_VNNI_SET

#if NBITS_X86_AMX
// The VNNI set with the AMX GEMM (uniform zero points only: amx_ok).
template <bool kF16>
X16Int8Kernels amx_int8(int bits) {
  X16Int8Kernels k = avx512vnni_int8<false, kF16>(bits);
  if (bits == 4) {
    k.gemm_name = kF16 ? "qgemm_q4x16h_16x16_amx" : "qgemm_q4x16_16x16_amx";
    k.gemm = qgemm_q4x16_amx<kF16>;
  } else {
    k.gemm_name = kF16 ? "qgemm_q8x16h_16x16_amx" : "qgemm_q8x16_16x16_amx";
    k.gemm = qgemm_q8x16_amx<kF16>;
  }
  return k;
}
#endif

NBITS_X16_FP32_SET(avx2, 6x16)
#if NBITS_X86_AVX512
NBITS_X16_FP32_SET(avx512, 6x32)
#endif

// Zero points that are all equal (GGUF Q4_1 / Q4_K: all 0) are folded into the
// symmetric kernels' default_zp(): no zero-point bytes, the same block stride as Q4_0
// plus the mins. The int8 kernels (AVX2 and VNNI) apply w.mins (has_mins) themselves.
// The four instantiations (explicit zero points or not, fp32 or fp16 scales) of one set above.
std::unique_ptr<PackedMatMul> pack_avx2_int8_with(const QuantizedMatrix& w, const PackOptions& o);

// With the measured choice (PackOptions::kernel_choice) the VNNI and AMX sets pack in the AVX2
// set's formats, the narrowest of the file's types (int5 for GGUF's 5-bit types, and with
// PackOptions the K-quants' super-block scales and int6), and every set's micro-kernels that can
// run a format are timed for it: fewer bytes a token, and each role on the fastest tile.
bool pack_as_avx2(const QuantizedMatrix& w, const PackOptions& o) {
  return o.kernel_choice && avx2_ok(w, cpu_features());
}

template <X16Int8Kernels (*Asym32)(int), X16Int8Kernels (*Asym16)(int), X16Int8Kernels (*Sym32)(int),
          X16Int8Kernels (*Sym16)(int)>
std::unique_ptr<PackedMatMul> pack_int8_with(const QuantizedMatrix& w, const PackOptions& o) {
  if (pack_as_avx2(w, o)) return pack_avx2_int8_with(w, o);
  if (w.zero_points != nullptr && quant::uniform_zero_point(w) < 0)
    return make_x16_int8(w, o, Asym32(w.bits), Asym16(w.bits));
  return make_x16_int8(w, o, Sym32(w.bits), Sym16(w.bits), /*fold_uniform_zp=*/true);
}
#define NBITS_PACK_INT8(set)                                                                \
  pack_int8_with<set##_int8<true, false>, set##_int8<true, true>, set##_int8<false, false>, \
                 set##_int8<false, true>>
#if NBITS_X86_AVX512VNNI
constexpr auto pack_avx512vnni_int8_with = NBITS_PACK_INT8(avx512vnni);
constexpr auto pack_ymm_avx512vnni_int8_with = NBITS_PACK_INT8(ymm_avx512vnni);
#endif
#if NBITS_X86_AVXVNNI
constexpr auto pack_avxvnni_int8_with = NBITS_PACK_INT8(avxvnni);
#endif
#undef NBITS_PACK_INT8

// GGUF's 5-bit types packed as int5 (the file's bytes) unless NBITS_INT5=0 keeps their 8-bit codes
// (the q8n kernels: more bytes a step, less unpacking a row; docs/PERFORMANCE.md compares them).
// MXFP4 / NVFP4 as lut4 unless NBITS_LUT4=0 (lut4_panels_enabled; then int5 where that is on).
bool env_on(const char* name) {
  const char* e = std::getenv(name);
  return e == nullptr || std::string_view(e) != "0";
}
bool avx2_int5() {
  static const bool on = env_on("NBITS_INT5");
  return on;
}

std::unique_ptr<PackedMatMul> pack_avx2_int8_with(const QuantizedMatrix& w, const PackOptions& o) {
  if (w.zero_points != nullptr && quant::uniform_zero_point(w) < 0)
    return make_x16_int8(w, o, avx2_int8_for<true>, /*fold_uniform_zp=*/false, avx2_int5(),
                         lut4_panels_enabled());
  return make_x16_int8(w, o, avx2_int8_for<false>, /*fold_uniform_zp=*/true, avx2_int5(),
                       lut4_panels_enabled());
}

#if NBITS_X86_AMX
std::unique_ptr<PackedMatMul> pack_amx_int8_with(const QuantizedMatrix& w, const PackOptions& o) {
  if (pack_as_avx2(w, o)) return pack_avx2_int8_with(w, o);
  return make_x16_int8(w, o, amx_int8<false>(w.bits), amx_int8<true>(w.bits), /*fold_uniform_zp=*/true);
}
#endif

// The two instantiations (fp32 or fp16 scales) of one CompFp32 set above, by zero points.
template <X16Fp32Kernels (*Asym32)(int), X16Fp32Kernels (*Asym16)(int), X16Fp32Kernels (*Sym32)(int),
          X16Fp32Kernels (*Sym16)(int)>
std::unique_ptr<PackedMatMul> pack_fp32_with(const QuantizedMatrix& w, const PackOptions& o) {
  if (w.zero_points != nullptr) return make_x16_fp32(w, o, Asym32(w.bits), Asym16(w.bits));
  return make_x16_fp32(w, o, Sym32(w.bits), Sym16(w.bits));
}
#define NBITS_PACK_FP32(set)                                                                \
  pack_fp32_with<set##_fp32<true, false>, set##_fp32<true, true>, set##_fp32<false, false>, \
                 set##_fp32<false, true>>
constexpr auto pack_avx2_fp32_with = NBITS_PACK_FP32(avx2);
#if NBITS_X86_AVX512
constexpr auto pack_avx512_fp32_with = NBITS_PACK_FP32(avx512);
#endif
#undef NBITS_PACK_FP32

std::unique_ptr<PackedMatMul> pack_avx2_int8(const QuantizedMatrix& w) { return pack_avx2_int8_with(w, {}); }
#if NBITS_X86_AVX512VNNI
std::unique_ptr<PackedMatMul> pack_avx512vnni_int8(const QuantizedMatrix& w) {
  return pack_avx512vnni_int8_with(w, {});
}
std::unique_ptr<PackedMatMul> pack_ymm_avx512vnni_int8(const QuantizedMatrix& w) {
  return pack_ymm_avx512vnni_int8_with(w, {});
}
#endif
#if NBITS_X86_AVXVNNI
std::unique_ptr<PackedMatMul> pack_avxvnni_int8(const QuantizedMatrix& w) {
  return pack_avxvnni_int8_with(w, {});
}
#endif
#if NBITS_X86_AMX
std::unique_ptr<PackedMatMul> pack_amx_int8(const QuantizedMatrix& w) { return pack_amx_int8_with(w, {}); }
#endif
std::unique_ptr<PackedMatMul> pack_avx2_fp32(const QuantizedMatrix& w) { return pack_avx2_fp32_with(w, {}); }
#if NBITS_X86_AVX512
std::unique_ptr<PackedMatMul> pack_avx512_fp32(const QuantizedMatrix& w) {
  return pack_avx512_fp32_with(w, {});
}
#endif

// The micro-kernels of every x16 int8 set this CPU runs that can run packed weight p: candidates of
// the measured choice (x16_matmul.h). The VNNI and AMX tiles read the plain formats (int4 / int8
// codes, fp32 or fp16 scales); the AVX2 set reads every format (its picks by scale format and span).
// A kernel name kept for the process (names are const char*; the widened ones are made here).
[[maybe_unused]] const char* intern(const std::string& name) {
  static std::mutex mu;
  static std::set<std::string> names;
  std::lock_guard lock(mu);
  return names.insert(name).first->c_str();
}

#if NBITS_X86_AVX512VNNI || NBITS_X86_AVXVNNI
// The AVX2 kernels of a format only they read, with a VNNI set's GEMM on its panels widened to a
// plain format (x16_vnni.h qgemm_x16_widened_<isa>), named e.g. "qgemm_q5x16h_widen_6x32_avx512vnni"
// (GGUF Q4_K's panels: read as they are, "qgemm_q4x16k_6x32_avx512vnni").
X16Int8Kernels widened(X16Int8Kernels k, decltype(X16Int8Kernels::gemm) gemm, const quant::PackedX16& p,
                       const char* tile_isa) {
  k.gemm = gemm;
  std::string name = "qgemm_q" + std::to_string(p.bits) + (p.lut4 ? "l" : "") + "x16";
  if (p.super_blocks > 0) name += "k";
  if (p.scales_fp16) name += "h";
  // The tile reads int4 with super-block scales and no zero points as it is (x16_vnni_tile_inl.h).
  name += p.super_blocks > 0 && p.bits == 4 && !p.lut4 && !p.has_zp ? "_" : "_widen_";
  name += tile_isa;
  k.gemm_name = intern(name);
  return k;
}
#endif

template <bool kAsym, bool kF16>
void x86_int8_sets(const quant::PackedX16& p, const CpuFeatures& cpu, std::vector<X16Int8Kernels>& r) {
  // The VNNI and AMX tiles have no form for zero points with mins (vnni_tiles_take): only the AVX2
  // kernels run such panels.
  if (p.has_zp && p.has_mins) {
    if (cpu.avx2 && cpu.fma && cpu.f16c) r.push_back(avx2_int8_for<kAsym>(p));
    return;
  }
  [[maybe_unused]] const bool plain = p.plain();
  [[maybe_unused]] const bool avx512 = cpu.avx512f && cpu.avx512bw && cpu.avx512vl && cpu.avx512dq;
#if NBITS_X86_AMX
  if (plain && cpu.amx_int8 && avx512 && cpu.avx512vnni && !p.has_zp &&
      (p.bits == 4 || p.default_zp() == 128))
    r.push_back(amx_int8<kF16>(p.bits));
#endif
#if NBITS_X86_AVX512VNNI
  if (plain && avx512 && cpu.avx512vnni) {
    r.push_back(avx512vnni_int8<kAsym, kF16>(p.bits));
    r.push_back(ymm_avx512vnni_int8<kAsym, kF16>(p.bits));
    // The GEMVs one panel at a time (one stream from memory, as the AVX2 GEMV reads).
    X16Int8Kernels one = avx512vnni_int8<kAsym, kF16>(p.bits);
    one.gemv = p.bits == 4 ? qgemv_q4x16_1p_avx512vnni<kAsym, kF16> : qgemv_q8x16_1p_avx512vnni<kAsym, kF16>;
    one.gemv_name = intern(std::string(one.gemv_name) + "_1p");
    r.push_back(one);
    one = ymm_avx512vnni_int8<kAsym, kF16>(p.bits);
    one.gemv =
        p.bits == 4 ? qgemv_q4x16_1p_ymm_avx512vnni<kAsym, kF16> : qgemv_q8x16_1p_ymm_avx512vnni<kAsym, kF16>;
    one.gemv_name = intern(std::string(one.gemv_name) + "_1p");
    r.push_back(one);
  }
#endif
#if NBITS_X86_AVXVNNI
  if (plain && cpu.avx2 && cpu.fma && cpu.f16c && cpu.avx_vnni)
    r.push_back(avxvnni_int8<kAsym, kF16>(p.bits));
#endif
#if NBITS_X86_AVX512VNNI || NBITS_X86_AVXVNNI
  // The formats only the AVX2 kernels read: its GEMV, and the VNNI GEMMs on widened panels.
  if (!plain && cpu.avx2 && cpu.fma && cpu.f16c) {
    const X16Int8Kernels narrow = avx2_int8_for<kAsym>(p);
    // int4 with super-block scales (GGUF Q4_K) and int5 / int6 without zero points: VNNI GEMVs
    // read them too (qgemv_q4x16k_*, qgemv_q56x16_1p_*).
    const bool q4k = p.super_blocks > 0 && p.bits == 4 && !p.lut4,
               q56 = (p.bits == 5 || p.bits == 6) && !kAsym;
    const int sc = p.super_blocks > 0 ? 2 : kF16 ? 1 : 0;
    // The int5 / int6 GEMV of one set in scale format sc, named as the AVX2 one with the set's suffix.
    using Gemv = decltype(X16Int8Kernels::gemv);
    const auto q56_gemv = [&](const Gemv(&fn5)[3], const Gemv(&fn6)[3], const char* suffix) {
      const std::string name = narrow.gemv_name;
      return std::pair<Gemv, const char*>{p.bits == 5 ? fn5[sc] : fn6[sc],
                                          intern(name.substr(0, name.size() - 5) + suffix)};  // less "_avx2"
    };
    const auto with_gemv = [&](X16Int8Kernels k, decltype(X16Int8Kernels::gemv) gemv, const char* name) {
      k.gemv = gemv, k.gemv_name = name;
      return k;
    };
#if NBITS_X86_AVX512VNNI
    if (avx512 && cpu.avx512vnni) {
      const X16Int8Kernels zmm = widened(narrow, qgemm_x16_widened_avx512vnni<kAsym>, p, "6x32_avx512vnni");
      const X16Int8Kernels ymm =
          widened(narrow, qgemm_x16_widened_ymm_avx512vnni<kAsym>, p, "6x16_ymm_avx512vnni");
      r.push_back(zmm);
      r.push_back(ymm);
      if (q4k) {
        r.push_back(with_gemv(zmm, qgemv_q4x16k_avx512vnni<kAsym>, "qgemv_q4x16k_avx512vnni"));
        r.push_back(with_gemv(zmm, qgemv_q4x16k_1p_avx512vnni<kAsym>, "qgemv_q4x16k_avx512vnni_1p"));
        r.push_back(with_gemv(ymm, qgemv_q4x16k_ymm_avx512vnni<kAsym>, "qgemv_q4x16k_ymm_avx512vnni"));
        r.push_back(with_gemv(ymm, qgemv_q4x16k_1p_ymm_avx512vnni<kAsym>, "qgemv_q4x16k_ymm_avx512vnni_1p"));
      }
      if (q56) {
        const Gemv z5[] = {qgemv_q56x16_1p_avx512vnni<5, 0>, qgemv_q56x16_1p_avx512vnni<5, 1>,
                           qgemv_q56x16_1p_avx512vnni<5, 2>};
        const Gemv z6[] = {qgemv_q56x16_1p_avx512vnni<6, 0>, qgemv_q56x16_1p_avx512vnni<6, 1>,
                           qgemv_q56x16_1p_avx512vnni<6, 2>};
        const Gemv y5[] = {qgemv_q56x16_1p_ymm_avx512vnni<5, 0>, qgemv_q56x16_1p_ymm_avx512vnni<5, 1>,
                           qgemv_q56x16_1p_ymm_avx512vnni<5, 2>};
        const Gemv y6[] = {qgemv_q56x16_1p_ymm_avx512vnni<6, 0>, qgemv_q56x16_1p_ymm_avx512vnni<6, 1>,
                           qgemv_q56x16_1p_ymm_avx512vnni<6, 2>};
        const auto [zf, zn] = q56_gemv(z5, z6, "_avx512vnni_1p");
        const auto [yf, yn] = q56_gemv(y5, y6, "_ymm_avx512vnni_1p");
        r.push_back(with_gemv(zmm, zf, zn));
        r.push_back(with_gemv(ymm, yf, yn));
      }
    }
#endif
#if NBITS_X86_AVXVNNI
    if (cpu.avx_vnni) {
      const X16Int8Kernels ymm = widened(narrow, qgemm_x16_widened_avxvnni<kAsym>, p, "4x16_avxvnni");
      r.push_back(ymm);
      if (q4k) {
        r.push_back(with_gemv(ymm, qgemv_q4x16k_avxvnni<kAsym>, "qgemv_q4x16k_avxvnni"));
        r.push_back(with_gemv(ymm, qgemv_q4x16k_1p_avxvnni<kAsym>, "qgemv_q4x16k_avxvnni_1p"));
      }
      if (q56) {
        const Gemv v5[] = {qgemv_q56x16_1p_avxvnni<5, 0>, qgemv_q56x16_1p_avxvnni<5, 1>,
                           qgemv_q56x16_1p_avxvnni<5, 2>};
        const Gemv v6[] = {qgemv_q56x16_1p_avxvnni<6, 0>, qgemv_q56x16_1p_avxvnni<6, 1>,
                           qgemv_q56x16_1p_avxvnni<6, 2>};
        const auto [vf, vn] = q56_gemv(v5, v6, "_avxvnni_1p");
        r.push_back(with_gemv(ymm, vf, vn));
      }
    }
#endif
  }
#endif
  if (cpu.avx2 && cpu.fma && cpu.f16c) r.push_back(avx2_int8_for<kAsym>(p));
}

std::vector<X16Int8Kernels> x86_int8_alternatives(const quant::PackedX16& p) {
  std::vector<X16Int8Kernels> r;
  const CpuFeatures& cpu = cpu_features();
  if (p.has_zp)
    p.scales_fp16 ? x86_int8_sets<true, true>(p, cpu, r) : x86_int8_sets<true, false>(p, cpu, r);
  else
    p.scales_fp16 ? x86_int8_sets<false, true>(p, cpu, r) : x86_int8_sets<false, false>(p, cpu, r);
  return r;
}

}  // namespace

std::string kernel_sets_left_out() {
  std::string r;
  auto out = [&](bool built, const char* name) {
    if (!built) r += r.empty() ? name : std::string(" ") + name;
  };
  out(NBITS_X86_AVX512, "avx512");
  out(NBITS_X86_AVX512VNNI, "avx512vnni");
  out(NBITS_X86_AVXVNNI, "avxvnni");
  out(NBITS_X86_AMX, "amx");
  return r;
}

void register_x86_matmul_nbits(std::vector<MatMulNBitsKernel>& t) {
  set_x16_int8_alternatives(x86_int8_alternatives);
  const CpuFeatures& cpu = cpu_features();
  // The GGUF formats at the file's size on one thread too, wherever the AVX2 int8 set (or a VNNI
  // one) runs: 1-thread decode of the real Qwen2.5-Coder Q4_K_M files with them took 0.79x (1.5B)
  // and 0.87x (0.5B) the time of the plain formats on AMD Zen3, 0.75-0.85x on Zen4 (VNNI GEMVs);
  // docs/PERFORMANCE.md.
  set_file_size_formats_fast(cpu.avx2 && cpu.fma && cpu.f16c);
  // Most preferred first.
#if NBITS_X86_AMX
  t.push_back({"x16_amx_int8", Compute::kInt8, amx_ok, pack_amx_int8, pack_amx_int8_with, /*mins=*/true});
#endif
#if NBITS_X86_AVX512VNNI
  t.push_back({"x16_avx512vnni_int8", Compute::kInt8, avx512vnni_ok, pack_avx512vnni_int8,
               pack_avx512vnni_int8_with, /*mins=*/true});
  t.push_back({"x16_ymm_avx512vnni_int8", Compute::kInt8, avx512vnni_ok, pack_ymm_avx512vnni_int8,
               pack_ymm_avx512vnni_int8_with, /*mins=*/true});
#endif
#if NBITS_X86_AVXVNNI
  t.push_back({"x16_avxvnni_int8", Compute::kInt8, avxvnni_ok, pack_avxvnni_int8, pack_avxvnni_int8_with,
               /*mins=*/true});
#endif
  t.push_back({"x16_avx2_int8", Compute::kInt8, avx2_ok, pack_avx2_int8, pack_avx2_int8_with, /*mins=*/true});
#if NBITS_X86_AVX512
  t.push_back({"x16_avx512_fp32", Compute::kFp32, avx512_ok, pack_avx512_fp32, pack_avx512_fp32_with});
#endif
  t.push_back({"x16_avx2_fp32", Compute::kFp32, avx2_ok, pack_avx2_fp32, pack_avx2_fp32_with});
}

}  // namespace nbits::kernels
