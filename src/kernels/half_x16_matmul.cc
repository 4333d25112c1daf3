#include "kernels/half_x16_matmul.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/cpu_features.h"
#include "base/fp16.h"

#if defined(NBITS_ARCH_X86)
#include "kernels/x86/half_x16_avx2.h"
#endif

namespace nbits::kernels {

PackedHalfX16 pack_half_x16(const uint16_t* B, int64_t K, int64_t N, bool bf16, ThreadPool* pool) {
  PackedHalfX16 w;
  w.bf16 = bf16;
  w.K = K;
  w.N = N;
  w.panels = (N + 15) / 16;
  w.data = quant::AlignedBytes(static_cast<size_t>(w.panels * K * 16) * sizeof(uint16_t));
  auto* out = reinterpret_cast<uint16_t*>(w.data.data());
  auto pack_panels = [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t n0 = p * 16, cols = std::min<int64_t>(16, N - n0);
      uint16_t* dst = out + p * K * 16;
      for (int64_t k = 0; k < K; ++k) {
        std::memcpy(dst + k * 16, B + k * N + n0, static_cast<size_t>(cols) * sizeof(uint16_t));
        std::fill(dst + k * 16 + cols, dst + k * 16 + 16, uint16_t{0});
      }
    }
  };
  if (pool != nullptr)
    pool->parallel_range(w.panels, 1, pack_panels);
  else
    pack_panels(0, w.panels);
  return w;
}

namespace {

void gemm_ref(const PackedHalfX16& w, int64_t p0, int64_t p1, int64_t M, const float* A, int64_t lda,
              float* Y, int64_t ldy) {
  for (int64_t p = p0; p < p1; ++p) {
    const uint16_t* b = w.panel(p);
    const int64_t n0 = p * 16, cols = std::min<int64_t>(16, w.N - n0);
    for (int64_t m = 0; m < M; ++m) {
      float acc[16] = {};
      const float* a = A + m * lda;
      for (int64_t k = 0; k < w.K; ++k)
        for (int j = 0; j < 16; ++j) {
          const uint16_t h = b[k * 16 + j];
          acc[j] = std::fma(a[k], w.bf16 ? bf16_to_float(h) : fp16_to_float(h), acc[j]);
        }
      std::copy(acc, acc + cols, Y + m * ldy + n0);
    }
  }
}

}  // namespace

const HalfX16Kernel& half_x16_ref() {
  static const HalfX16Kernel k{"hgemm_x16_ref", gemm_ref};
  return k;
}

const std::vector<HalfX16Kernel>& half_x16_available() {
  static const std::vector<HalfX16Kernel> k = [] {
    std::vector<HalfX16Kernel> v;
#if defined(NBITS_ARCH_X86)
    const CpuFeatures& f = cpu_features();
    if (f.avx512f && f.avx2 && f.fma && f.f16c) v.push_back({"hgemm_x16_4x32_avx512", hgemm_x16_avx512});
    if (f.avx2 && f.fma && f.f16c) v.push_back({"hgemm_x16_4x16_avx2", hgemm_x16_avx2});
#endif
    v.push_back(half_x16_ref());
    return v;
  }();
  return k;
}

const HalfX16Kernel& half_x16_best() { return half_x16_available().front(); }

}  // namespace nbits::kernels
