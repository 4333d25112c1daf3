#include "kernels/x16_matmul.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <utility>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "kernels/kernel_choice.h"

namespace nbits::kernels {
namespace {

// Half-precision scales when asked, or when they are exact (then no result changes).
bool fp16_scales(const QuantizedMatrix& w, const PackOptions& options) {
  return options.fp16_scales || (options.exact_fp16_scales && quant::scales_exact_fp16(w));
}

std::atomic<X16Int8Alternatives> alternatives{nullptr};

// Evicts [p, p + bytes) from every cache level, so that a GEMV is timed as decode runs it: from
// memory (x86: clflush per line; arm64: DC CIVAC per line; elsewhere nothing, and the GEMV is
// timed from cache).
void evict_bytes(const uint8_t* p, size_t bytes) {
#if defined(__x86_64__)
  for (size_t i = 0; i < bytes; i += 64) _mm_clflush(p + i);
  _mm_mfence();
#elif defined(__aarch64__)
  // Clean and invalidate to the point of coherency (Linux lets user space run DC CIVAC).
  for (size_t i = 0; i < bytes; i += 64) asm volatile("dc civac, %0" : : "r"(p + i) : "memory");
  asm volatile("dsb ish" : : : "memory");
#else
  (void)p, (void)bytes;
#endif
}

// The packed format, as the choice's key names it: "q4x16h b32 sym mins".
std::string format_key(const quant::PackedX16& p) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "q%d%sx16%s%s b%d %s%s", p.bits, p.lut4 ? "l" : "", p.scales_fp16 ? "h" : "",
                p.super_blocks > 0 ? "k" : "", p.block, p.has_zp ? "asym" : "sym", p.has_mins ? " mins" : "");
  std::string k = buf;
  if ((p.bits == 8 || p.lut4) && p.code_span_bits() < 8) {
    std::snprintf(buf, sizeof buf, " span%d", p.code_span_bits());
    k += buf;
  }
  return k;
}

// What the kernel choice times the candidates on: the model's own panels, repeated up to ~4M
// weights when its first weight of the format is smaller. The GEMV streams them from memory (a
// short stream times the prefetchers' start, not decode: on Zen4 a 0.8M-weight q_proj ranked the
// zmm GEMV first, and decode ran 1.4x slower on it); the GEMM runs ~1M of them in cache
// (compute-bound); the few-row GEMM streams them from memory as the GEMV does, 4 rows (a
// speculative verify step's or a small batch's); M = 1, 4 and 16 rows of quantized random activations.
struct Bench {
  static constexpr int64_t kRowsGemm = 16, kRowsSmall = 4;
  int64_t kp, panels, gemm_panels;
  quant::PackedX16 w;
  std::vector<int8_t> qa;
  std::vector<float> sa, y;
  std::vector<int32_t> qsum;

  Bench(const quant::PackedX16& p, QuantizeRowFn quantize)
      : kp(p.k_blocks * p.block),
        panels(panels_for(p, int64_t{4} << 20)),
        gemm_panels(std::min(panels, panels_for(p, int64_t{1} << 20))),
        w(p.with_panels(panels)),
        qa(static_cast<size_t>(kRowsGemm * kp + 64)),
        sa(static_cast<size_t>(kRowsGemm * p.k_blocks)),
        y(static_cast<size_t>(kRowsGemm * panels * 16)),
        qsum(sa.size()) {
    std::vector<float> a(static_cast<size_t>(p.K));
    std::mt19937 rng(1234);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (int64_t m = 0; m < kRowsGemm; ++m) {
      for (auto& x : a) x = u(rng);
      quantize(a.data(), p.K, p.block, qa.data() + m * kp, sa.data() + m * p.k_blocks,
               qsum.data() + m * p.k_blocks);
    }
  }
  static int64_t panels_for(const quant::PackedX16& p, int64_t weights) {
    return std::max<int64_t>(1, weights / (16 * p.k_blocks * p.block));
  }
  void gemv(decltype(X16Int8Kernels::gemv) g) {
    g(w, 0, panels, qa.data(), sa.data(), qsum.data(), y.data(), nullptr);
  }
  void gemm(decltype(X16Int8Kernels::gemm) g) {
    g(w, 0, gemm_panels, kRowsGemm, qa.data(), sa.data(), qsum.data(), y.data(), panels * 16, nullptr);
  }
  void gemm_small(decltype(X16Int8Kernels::gemm) g) {
    g(w, 0, panels, kRowsSmall, qa.data(), sa.data(), qsum.data(), y.data(), panels * 16, nullptr);
  }
  void evict() const { evict_bytes(w.data.data(), w.data.size()); }
};

}  // namespace

void set_x16_int8_alternatives(X16Int8Alternatives provider) { alternatives.store(provider); }

std::vector<X16Int8Kernels> x16_int8_alternatives(const quant::PackedX16& p) {
  (void)matmul_nbits_kernels();  // the architecture registers its provider with its table
  const X16Int8Alternatives provider = alternatives.load();
  return provider != nullptr ? provider(p) : std::vector<X16Int8Kernels>{};
}

X16Int8Kernels choose_x16_int8(const quant::PackedX16& p, const X16Int8Kernels& own) {
  std::vector<X16Int8Kernels> all{own};
  for (const auto& k : x16_int8_alternatives(p))
    if (k.tiles_bytes == nullptr && own.tiles_bytes == nullptr) all.push_back(k);
  // The roles' distinct candidates (several sets may share a micro-kernel).
  std::vector<size_t> gemvs, gemms;
  for (size_t i = 0; i < all.size(); ++i) {
    const auto same_gemv = [&](size_t j) { return all[j].gemv == all[i].gemv; };
    const auto same_gemm = [&](size_t j) { return all[j].gemm == all[i].gemm; };
    if (std::none_of(gemvs.begin(), gemvs.end(), same_gemv)) gemvs.push_back(i);
    if (std::none_of(gemms.begin(), gemms.end(), same_gemm)) gemms.push_back(i);
  }
  if (gemvs.size() <= 1 && gemms.size() <= 1) return own;
  X16Int8Kernels k = own;
  const std::string fmt = format_key(p);
  // The timing's data, made only when a key is measured (most matrices find their format decided).
  std::optional<Bench> bench;
  const auto get = [&]() -> Bench& {
    if (!bench) bench.emplace(p, own.quantize);
    return *bench;
  };
  if (gemvs.size() > 1) {
    std::vector<KernelCandidate> c;
    for (size_t i : gemvs)
      c.push_back({all[i].gemv_name, [&, g = all[i].gemv] { get().gemv(g); }, [&] { get().evict(); }});
    const size_t pick = gemvs[choose_kernel("gemv " + fmt, c)];
    k.gemv = all[pick].gemv;
    k.gemv_name = all[pick].gemv_name;
  }
  if (gemms.size() > 1) {
    std::vector<KernelCandidate> c;
    for (size_t i : gemms) c.push_back({all[i].gemm_name, [&, g = all[i].gemm] { get().gemm(g); }});
    const size_t pick = gemms[choose_kernel("gemm " + fmt, c)];
    k.gemm = all[pick].gemm;
    k.gemm_name = all[pick].gemm_name;
    // A few rows (2..8): the GEMMs again, from memory. Every candidate gives the same bits.
    std::vector<KernelCandidate> s;
    for (size_t i : gemms)
      s.push_back({all[i].gemm_name, [&, g = all[i].gemm] { get().gemm_small(g); }, [&] { get().evict(); }});
    const size_t small = gemms[choose_kernel("gemm_small " + fmt, s)];
    if (all[small].gemm != k.gemm) {
      k.gemm_small = all[small].gemm;
      k.gemm_small_name = all[small].gemm_name;
    }
  }
  return k;
}

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
  const X16Int8Kernels& own = p.scales_fp16 ? k16 : k32;
  const X16Int8Kernels k = options.kernel_choice ? choose_x16_int8(p, own) : own;
  return make_panel_int8(std::move(p), k);
}

std::unique_ptr<PackedMatMul> make_x16_int8(const QuantizedMatrix& w, const PackOptions& options,
                                            X16Int8Kernels (*pick)(const quant::PackedX16&),
                                            bool fold_uniform_zp, bool int5, bool lut4) {
  quant::PackedX16 p = quant::pack_x16(w, fp16_scales(w, options), options.rows_consumed, options.pool,
                                       fold_uniform_zp, int5, options.super_scales, options.int6, lut4);
  const X16Int8Kernels k = options.kernel_choice ? choose_x16_int8(p, pick(p)) : pick(p);
  return make_panel_int8(std::move(p), k);
}

std::unique_ptr<PackedMatMul> make_x16_fp32(const QuantizedMatrix& w, const PackOptions& options,
                                            const X16Fp32Kernels& k32, const X16Fp32Kernels& k16) {
  quant::PackedX16 p = quant::pack_x16(w, fp16_scales(w, options), options.rows_consumed, options.pool);
  const X16Fp32Kernels& k = p.scales_fp16 ? k16 : k32;
  return make_panel_fp32(std::move(p), k);
}

}  // namespace nbits::kernels
