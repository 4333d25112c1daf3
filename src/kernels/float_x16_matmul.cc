#include "kernels/float_x16_matmul.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/cpu_features.h"
#include "base/fp16.h"

#if defined(NBITS_ARCH_X86)
#include "kernels/x86/built_sets.h"
#include "kernels/x86/float_x16_x86.h"
#endif

namespace nbits::kernels {

PackedFloatX16 pack_float_x16(const void* B, int64_t K, int64_t N, X16Float elem, ThreadPool* pool, bool b_nk,
                              const std::function<void(const void*, size_t)>& consumed) {
  PackedFloatX16 w;
  w.elem = elem;
  w.K = K;
  w.N = N;
  w.panels = (N + 15) / 16;
  const size_t es = w.elem_bytes();
  w.data = quant::AlignedBytes(static_cast<size_t>(w.panels * K * 16) * es);
  const auto* src = static_cast<const uint8_t*>(B);
  uint8_t* out = w.data.data();
  auto pack_panels = [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t n0 = p * 16, cols = std::min<int64_t>(16, N - n0);
      uint8_t* dst = out + static_cast<size_t>(p * K * 16) * es;
      for (int64_t k = 0; k < K; ++k) {
        if (b_nk) {
          for (int64_t j = 0; j < cols; ++j)
            std::memcpy(dst + static_cast<size_t>(k * 16 + j) * es,
                        src + static_cast<size_t>((n0 + j) * K + k) * es, es);
        } else {
          std::memcpy(dst + static_cast<size_t>(k * 16) * es, src + static_cast<size_t>(k * N + n0) * es,
                      static_cast<size_t>(cols) * es);
        }
        std::memset(dst + static_cast<size_t>(k * 16 + cols) * es, 0, static_cast<size_t>(16 - cols) * es);
      }
    }
    if (b_nk && consumed) {  // rows [16 p0, 16 p1) of B [N, K]
      const int64_t n1 = std::min<int64_t>(N, p1 * 16);
      consumed(src + static_cast<size_t>(p0 * 16 * K) * es, static_cast<size_t>((n1 - p0 * 16) * K) * es);
    }
  };
  // Chunks of at most 64 panels (a few MB of a wide lm_head), so consumed() frees as it goes.
  auto pack_chunks = [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; p += 64) pack_panels(p, std::min(p1, p + 64));
  };
  if (pool != nullptr)
    pool->parallel_range(w.panels, 1, pack_chunks);
  else
    pack_chunks(0, w.panels);
  return w;
}

namespace {

float element(const PackedFloatX16& w, int64_t p, int64_t i) {
  switch (w.elem) {
    case X16Float::kF32:
      return w.panel<float>(p)[i];
    case X16Float::kBF16:
      return bf16_to_float(w.panel<uint16_t>(p)[i]);
    case X16Float::kF16:
      break;
  }
  return fp16_to_float(w.panel<uint16_t>(p)[i]);
}

void gemm_ref(const PackedFloatX16& w, int64_t p0, int64_t p1, int64_t M, const float* A, int64_t lda,
              float* Y, int64_t ldy) {
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t n0 = p * 16, cols = std::min<int64_t>(16, w.N - n0);
    for (int64_t m = 0; m < M; ++m) {
      float acc[16] = {};
      const float* a = A + m * lda;
      for (int64_t k = 0; k < w.K; ++k)
        for (int j = 0; j < 16; ++j) acc[j] = std::fma(a[k], element(w, p, k * 16 + j), acc[j]);
      std::copy(acc, acc + cols, Y + m * ldy + n0);
    }
  }
}

}  // namespace

const FloatX16Kernel& float_x16_ref() {
  static const FloatX16Kernel k{"hgemm_x16_ref", "sgemm_x16_ref", gemm_ref};
  return k;
}

const std::vector<FloatX16Kernel>& float_x16_available() {
  static const std::vector<FloatX16Kernel> k = [] {
    std::vector<FloatX16Kernel> v;
#if defined(NBITS_ARCH_X86)
    const CpuFeatures& f = cpu_features();
#if NBITS_X86_AVX512
    if (f.avx512f && f.avx2 && f.fma && f.f16c)
      v.push_back({"hgemm_x16_4x32_avx512", "sgemm_x16_4x32_avx512", float_x16_gemm_avx512});
#endif
    if (f.avx2 && f.fma && f.f16c)
      v.push_back({"hgemm_x16_4x16_avx2", "sgemm_x16_4x16_avx2", float_x16_gemm_avx2});
#endif
    v.push_back(float_x16_ref());
    return v;
  }();
  return k;
}

const FloatX16Kernel& float_x16_best() { return float_x16_available().front(); }

namespace {

class FloatX16Matmul final : public PackedMatMul {
 public:
  explicit FloatX16Matmul(PackedFloatX16 w) : w_(std::move(w)), kernel_(float_x16_best()) {}
  void run(const float* A, int64_t M, float* Y, const float* bias, ThreadPool& pool) const override {
    pool.parallel_range(w_.panels, 1,
                        [&](int64_t p0, int64_t p1) { kernel_.gemm(w_, p0, p1, M, A, w_.K, Y, w_.N); });
    if (bias == nullptr) return;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < w_.N; ++n) Y[m * w_.N + n] += bias[n];
  }
  const char* kernel_name(int64_t /*M*/) const override { return kernel_.name(w_.elem); }
  size_t packed_bytes() const override { return w_.data.size(); }

 private:
  PackedFloatX16 w_;
  const FloatX16Kernel& kernel_;
};

}  // namespace

std::unique_ptr<PackedMatMul> make_float_x16_matmul(PackedFloatX16 w) {
  return std::make_unique<FloatX16Matmul>(std::move(w));
}

}  // namespace nbits::kernels
