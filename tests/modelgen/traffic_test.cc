// Roofline arithmetic: bytes read per decode step of a small shape, by hand.
#include "modelgen/traffic.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "modelgen/bandwidth.h"
#include "modelgen/shapes.h"

namespace nbits::modelgen {
namespace {

ModelShape small_shape() {
  ModelShape s;
  s.hidden = 64, s.layers = 2, s.heads = 4, s.kv_heads = 2, s.head_size = 16, s.intermediate = 128;
  s.vocab = 100, s.qkv_bias = true;
  return s;
}

TEST(Traffic, MatMulNBitsBytesByHand) {
  QuantSpec q;  // int4 b32 symmetric
  // K=64 -> 2 blocks of 16 bytes, 4-byte scale each.
  EXPECT_EQ(matmul_nbits_bytes(64, 128, q), 128 * 2 * 16 + 128 * 2 * 4);
  q.asym = true;  // + one packed zero-point byte per row (2 blocks x 4 bits)
  EXPECT_EQ(matmul_nbits_bytes(64, 128, q), 128 * 2 * 16 + 128 * 2 * 4 + 128);
  QuantSpec q8;
  q8.bits = 8;
  EXPECT_EQ(matmul_nbits_bytes(64, 100, q8), 100 * 2 * 32 + 100 * 2 * 4);
  QuantSpec q128;
  q128.block = 128;  // K=960 pads to 8 blocks (SmolLM2 at block 128)
  EXPECT_EQ(matmul_nbits_bytes(960, 10, q128), 10 * 8 * 64 + 10 * 8 * 4);
  QuantSpec h;  // --scales fp16: 2-byte scales (Q4_0's 18 bytes per 32 weights)
  h.scale_bytes = 2;
  EXPECT_EQ(matmul_nbits_bytes(64, 128, h), 128 * 2 * (16 + 2));
  EXPECT_EQ(h.describe(), "int4 b32 f16s");
  h.scale_bytes = 3;
  EXPECT_THROW(matmul_nbits_bytes(64, 128, h), Error);
}

TEST(Traffic, TokenTrafficSmallShapeByHand) {
  const TokenTraffic t = token_traffic(small_shape(), QuantSpec{}, 10);
  // per layer: qkv 5120 + o 2560 + gate/up 2*5120 + down (K=128: 4 blocks) 5120
  EXPECT_EQ(t.layer_matmul_bytes, 2 * 23040);
  EXPECT_EQ(t.lm_head_bytes, 4000);
  // 5 norms of 64 floats, 2 qkv biases of 128 floats, one embedding row of 64 floats
  EXPECT_EQ(t.small_bytes, 1280 + 1024 + 256);
  EXPECT_EQ(t.kv_bytes, 10 * 512);  // 2 layers x K,V x 2 kv heads x 16 x 4 bytes per position
  EXPECT_EQ(t.total(), 57760);
  EXPECT_NEAR(floor_ms(t.total(), 1.0), 0.05776, 1e-12);
  EXPECT_NEAR(floor_ms(t.total(), 2.0), 0.02888, 1e-12);
  EXPECT_THROW(floor_ms(1, 0.0), Error);
}

TEST(Traffic, QwenInt4Block32IsAbout309MB) {
  // 494M quantized weights (24 layers x 14.9M + lm_head 136M) at 0.5 + 4/32 bytes each.
  const TokenTraffic t = token_traffic(shape_preset("qwen2.5-0.5b"), QuantSpec{}, 0);
  EXPECT_GT(t.weight_bytes(), 305'000'000);
  EXPECT_LT(t.weight_bytes(), 312'000'000);
  EXPECT_EQ(t.lm_head_bytes, 151936LL * 28 * (16 + 4));
}

TEST(Shapes, PresetsValidateAndUnknownThrows) {
  for (const auto& name : preset_names()) EXPECT_NO_THROW(shape_preset(name).validate()) << name;
  EXPECT_THROW(shape_preset("gpt-5"), Error);
  ModelShape bad = small_shape();
  bad.kv_heads = 3;
  EXPECT_THROW(bad.validate(), Error);
}

TEST(Bandwidth, SmallArrayGivesPositiveFiniteFigures) {
  const BandwidthResult r = measure_read_bandwidth(2, 4 << 20, 3);
  ASSERT_EQ(r.gbs.size(), 3u);
  EXPECT_GT(r.median_gbs, 0.1);
  EXPECT_LT(r.median_gbs, 1e5);
  EXPECT_LE(r.worst_gbs, r.median_gbs);
  EXPECT_LE(r.median_gbs, r.best_gbs);
  EXPECT_THROW(measure_read_bandwidth(0, 4 << 20, 1), Error);
  EXPECT_THROW(measure_read_bandwidth(1, 1024, 1), Error);
}

}  // namespace
}  // namespace nbits::modelgen
