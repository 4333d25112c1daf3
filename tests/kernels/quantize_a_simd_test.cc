// SIMD activation quantizers must be bit-identical to quant::quantize_row_blocks.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "base/cpu_features.h"
#include "kernels/x16_matmul.h"
#include "quant/quantize_a.h"
#if defined(NBITS_ARCH_X86)
#include "kernels/x86/x16_avx2.h"
#endif

namespace nbits::kernels {
namespace {

using QuantFn = void (*)(const float*, int64_t, int, int8_t*, float*, int32_t*);

[[maybe_unused]] void expect_identical(QuantFn fn, const char* name) {
  std::mt19937 rng(42);
  for (int block : {16, 32, 64, 128, 256})
    for (int64_t K :
         {int64_t{block}, int64_t{3} * block, int64_t{2} * block + 5, int64_t{7}, int64_t{block} - 1}) {
      if (K <= 0) continue;
      const int64_t kb = (K + block - 1) / block;
      std::vector<float> a(static_cast<size_t>(K));
      std::uniform_real_distribution<float> d(-3.0f, 3.0f);
      for (auto& v : a) v = d(rng);
      // Ties: with amax = 127 (inv = 1), x.5 values must round half to even.
      if (K >= 8) {
        a[0] = 127.0f;
        a[1] = 0.5f, a[2] = 1.5f, a[3] = -2.5f, a[4] = -0.5f, a[5] = 126.5f;
      }
      if (kb > 1)  // an all-zero block
        for (int64_t k = block; k < std::min<int64_t>(K, 2 * block); ++k) a[static_cast<size_t>(k)] = 0.0f;
      std::vector<int8_t> q1(static_cast<size_t>(kb * block), 99), q2(q1.size(), -99);
      std::vector<float> s1(static_cast<size_t>(kb)), s2(s1.size());
      std::vector<int32_t> i1(s1.size()), i2(s1.size());
      quantize_row_blocks_isum(a.data(), K, block, q1.data(), s1.data(), i1.data());
      fn(a.data(), K, block, q2.data(), s2.data(), i2.data());
      EXPECT_EQ(q1, q2) << name << " block=" << block << " K=" << K;
      EXPECT_EQ(0, std::memcmp(s1.data(), s2.data(), s1.size() * 4))
          << name << " block=" << block << " K=" << K;
      EXPECT_EQ(i1, i2) << name << " block=" << block << " K=" << K;
    }
}

TEST(QuantizeASimd, IntegerSumsMatchCodes) {
  std::vector<float> a = {1.0f, -2.0f, 0.25f};
  std::vector<int8_t> q(16);
  float s;
  int32_t sum;
  quantize_row_blocks_isum(a.data(), 3, 16, q.data(), &s, &sum);
  EXPECT_EQ(sum, q[0] + q[1] + q[2]);
  EXPECT_EQ(q[1], -127);
}

#if defined(NBITS_ARCH_X86)
TEST(QuantizeASimd, Avx2BitIdentical) {
  if (!detect_cpu_features().avx2) GTEST_SKIP() << "no AVX2 on this CPU";
  expect_identical(quantize_row_blocks_avx2, "avx2");
}
#endif

}  // namespace
}  // namespace nbits::kernels
