#include "base/fp16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace nbits {

TEST(Fp16, RoundTripsEveryHalf) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = fp16_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(float_to_fp16(f), h) << "half bits " << h;
  }
}

TEST(Fp16, KnownValues) {
  EXPECT_EQ(fp16_to_float(0x3c00), 1.0f);
  EXPECT_EQ(fp16_to_float(0xc000), -2.0f);
  EXPECT_EQ(fp16_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(float_to_fp16(65520.0f), 0x7c00);                      // rounds to inf
  EXPECT_EQ(float_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie to even
  EXPECT_EQ(bf16_to_float(float_to_bf16(3.0f)), 3.0f);
}

}  // namespace nbits
