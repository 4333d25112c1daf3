// Random MatMulNBits weights and activations for the kernel tests: codes (with garbage past K),
// scales, zero points, GGUF-style block mins, and GGUF K-quant-style super-block scales.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "base/fp16.h"
#include "kernels/matmul_nbits.h"

namespace nbits::kernels::testing {

struct RandomWeight {
  std::vector<uint8_t> codes, zp;
  std::vector<float> scales, mins;
  QuantizedMatrix w;

  // span_bits < 8 (int8 only): every code in [code_lo, code_lo + 2^span_bits), as GGUF's 5- and
  // 6-bit types are held (Q5_0: 112..143), except the garbage past K.
  RandomWeight(int bits, int block, int64_t K, int64_t N, bool asym, std::mt19937& rng, int span_bits = 8,
               int code_lo = 0) {
    w.N = N;
    w.K = K;
    w.bits = bits;
    w.block_size = block;
    const int64_t kb = w.k_blocks();
    codes.resize(static_cast<size_t>(N * kb * w.blob_bytes()));
    for (auto& c : codes) c = static_cast<uint8_t>(rng());  // includes garbage past K: must not count
    if (bits == 8 && span_bits < 8)
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < K; ++k)
          codes[static_cast<size_t>(n * kb * block + k)] =
              static_cast<uint8_t>(code_lo + static_cast<int>(rng() % (1u << span_bits)));
    std::uniform_real_distribution<float> sd(0.002f, 0.02f);
    scales.resize(static_cast<size_t>(N * kb));
    for (auto& s : scales) s = sd(rng);
    if (asym) {
      zp.resize(static_cast<size_t>(N * w.zp_row_bytes()));
      for (auto& z : zp) z = static_cast<uint8_t>(rng());
    }
    w.codes = codes.data();
    w.scales = scales.data();
    w.zero_points = asym ? zp.data() : nullptr;
  }

  // Every real code (k < K) drawn from `levels` instead (int8 only): GGUF MXFP4 / NVFP4 held as
  // 8-bit codes take the 15 values 128 + {0, +-1, +-2, +-3, +-4, +-6, +-8, +-12}.
  void use_levels(const std::vector<int>& levels, std::mt19937& rng) {
    const int64_t kb = w.k_blocks();
    for (int64_t n = 0; n < w.N; ++n)
      for (int64_t k = 0; k < w.K; ++k)
        codes[static_cast<size_t>(n * kb * w.block_size + k)] =
            static_cast<uint8_t>(levels[rng() % levels.size()]);
  }

  // GGUF-style block mins (Q4_1: around -8 * scale); zero_zp: explicit zero points, all 0 (Q4_1, Q4_K).
  void add_mins(bool zero_zp, std::mt19937& rng) {
    mins.resize(scales.size());
    std::uniform_real_distribution<float> md(-0.16f, 0.02f);
    for (auto& m : mins) m = md(rng);
    w.mins = mins.data();
    if (zero_zp) {
      zp.assign(static_cast<size_t>(w.N * w.zp_row_bytes()), 0);
      w.zero_points = zp.data();
    }
  }

  // Scales (and mins, when added) as GGUF's K-quants hold them: per column and 256 elements an
  // fp16 D (a negative one for the mins) times an integer drawn from [lo, hi] ([mlo, mhi]), so
  // every scale is exactly (float)q * D. With `top`, each run's first block takes hi (the
  // quantizers' largest sub-block scale: 63 for Q4_K, -128 for Q6_K).
  void make_super(std::mt19937& rng, int lo, int hi, int mlo = 0, int mhi = 0, bool top = true) {
    const int64_t kb = w.k_blocks(), per = std::max(1, 256 / w.block_size);
    std::uniform_real_distribution<float> dd(0.0002f, 0.002f);
    const auto fill = [&](std::vector<float>& v, int a, int b, float sign, int first) {
      for (int64_t n = 0; n < w.N; ++n)
        for (int64_t b0 = 0; b0 < kb; b0 += per) {
          const float D = sign * fp16_to_float(float_to_fp16(dd(rng)));
          for (int64_t j = b0; j < std::min(kb, b0 + per); ++j) {
            const int q =
                top && j == b0 ? first : a + static_cast<int>(rng() % static_cast<unsigned>(b - a + 1));
            v[static_cast<size_t>(n * kb + j)] = static_cast<float>(q) * D;
          }
        }
    };
    fill(scales, lo, hi, 1.0f, hi);
    if (!mins.empty()) fill(mins, mlo, mhi, -1.0f, mhi);
  }
};

inline std::vector<float> random_a(int64_t M, int64_t K, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> a(static_cast<size_t>(M * K));
  for (auto& v : a) v = d(rng);
  if (M > 1)  // an all-zero activation block (scale 0) in row 1
    for (int64_t k = 0; k < std::min<int64_t>(K, 16); ++k) a[static_cast<size_t>(K + k)] = 0.0f;
  return a;
}

}  // namespace nbits::kernels::testing
