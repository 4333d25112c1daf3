// --kv-cache f16 (SessionOptions::kv_cache) on the real stories260K exports: the
// cache inputs report fp16 and use half the bytes, and teacher-forced logits over
// 256 steps stay within a stated bound of the fp32 cache (below).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "llm/generator.h"
#include "support/logit_diff.h"
#include "support/shared_data.h"

namespace nbits::llm {
namespace {

std::string stories(const std::string& rel) { return testing::shared_path("models/stories260K/" + rel); }

using testing::rel_diff;

// fp32 export: the fp16 cache alone (K/V rounded to 2^-11 relative through 5 layers) stays under
// 1e-2 of max|logit|. int4 export (int8 activations): a small change can flip an activation's
// int8 rounding, so the bound is what the quantization itself costs: the fp16 cache moves the
// logits less than the int4 model differs from the fp32 model on the same tokens.
TEST(KvCacheDtype, Fp16CacheFollowsFp32Cache) {
  NBITS_REQUIRE_SHARED(stories("onnx_fp32/model.onnx"));
  for (const char* variant : {"onnx_fp32", "onnx_int4"}) {
    SCOPED_TRACE(variant);
    graph::SessionOptions o32, o16;
    o16.kv_cache = graph::SessionOptions::KvCache::kF16;
    auto g32 = Generator::load(stories(variant), o32, 300);
    auto g16 = Generator::load(stories(variant), o16, 300);
    auto fp32_model = Generator::load(stories("onnx_fp32"), o32, 300);
    const std::string past0 = format_layer_name(g16->config().past_key_pattern, 0);
    EXPECT_EQ(g16->session().input_dtype(past0), graph::DType::kF16);
    EXPECT_EQ(g32->session().input_dtype(past0), graph::DType::kF32);
    EXPECT_EQ(g16->kv_cache_bytes() * 2, g32->kv_cache_bytes());
    // Teacher-forced: the fp32-cache greedy continuation fed to all three.
    int32_t id = 1;
    double worst = 0, quant = 0;
    int argmax_diff = 0;
    for (int step = 0; step < 256; ++step) {
      const std::span<const float> a = g32->append(std::span<const int32_t>(&id, 1));
      const std::vector<float> l32(a.begin(), a.end());
      const std::span<const float> b = fp32_model->append(std::span<const int32_t>(&id, 1));
      quant = std::max(quant, rel_diff(l32, b));
      const std::span<const float> l16 = g16->append(std::span<const int32_t>(&id, 1));
      ASSERT_EQ(l16.size(), l32.size());
      worst = std::max(worst, rel_diff(l16, l32));
      const auto top32 = std::max_element(l32.begin(), l32.end()) - l32.begin();
      const auto top16 = std::max_element(l16.begin(), l16.end()) - l16.begin();
      argmax_diff += top32 != top16;
      id = static_cast<int32_t>(top32);
    }
    if (std::string(variant) == "onnx_fp32")
      EXPECT_LE(worst, 1e-2);
    else
      EXPECT_LT(worst, quant) << "the fp16 cache costs more than int4 quantization does";
    std::printf(
        "[kv f16] %s: 256 teacher-forced steps, max |f16 - f32 cache| / max|logit| = %.2e (argmax "
        "differs at %d); this export vs the fp32 model: %.2e\n",
        variant, worst, argmax_diff, quant);
  }
}

}  // namespace
}  // namespace nbits::llm
