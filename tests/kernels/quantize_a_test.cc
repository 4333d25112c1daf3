#include "quant/quantize_a.h"

#include <gtest/gtest.h>

#include <vector>

namespace nbits::quant {

TEST(QuantizeA, RoundHalfToEvenAndZeroTail) {
  // amax 127 -> inv 1: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -0.5 -> -0, tail zero.
  std::vector<float> a = {127.0f, 0.5f, 1.5f, 2.5f, -0.5f, -127.0f, 3.0f};
  std::vector<int8_t> q(16, 99);
  std::vector<float> s(1), sums(1);
  quantize_row_blocks(a.data(), 7, 16, q.data(), s.data(), sums.data());
  EXPECT_FLOAT_EQ(s[0], 1.0f);
  std::vector<int8_t> want = {127, 0, 2, 2, 0, -127, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(q, want);
  EXPECT_FLOAT_EQ(sums[0], 7.0f);
}

TEST(QuantizeA, AllZeroBlockHasZeroScale) {
  std::vector<float> a(32, 0.0f);
  std::vector<int8_t> q(32);
  std::vector<float> s(2);
  quantize_row_blocks(a.data(), 32, 16, q.data(), s.data());
  EXPECT_EQ(s[0], 0.0f);
  EXPECT_EQ(s[1], 0.0f);
  for (int8_t v : q) EXPECT_EQ(v, 0);
}

}  // namespace nbits::quant
