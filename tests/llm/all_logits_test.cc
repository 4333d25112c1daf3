// Generator::append_all_logits on the real stories260K exports: every row equals the logits that
// one-token steps give at that position, the last row equals append()'s, and the step leaves the
// session computing the last row only again (decode steps unchanged).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "llm/generator.h"
#include "support/shared_data.h"

namespace nbits::llm {
namespace {

std::string stories(const std::string& rel) { return testing::shared_path("models/stories260K/" + rel); }

float max_abs_diff(std::span<const float> a, std::span<const float> b) {
  EXPECT_EQ(a.size(), b.size());
  float d = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

TEST(AllLogits, RowsEqualOneTokenSteps) {
  NBITS_REQUIRE_SHARED(stories("onnx_fp32/model.onnx"));
  for (const char* variant : {"onnx_fp32", "onnx_int4"}) {
    SCOPED_TRACE(variant);
    auto gen = Generator::load(stories(variant));
    const std::vector<int32_t> ids = {1, 403, 407, 261, 378, 432, 383, 286, 261, 1000 % 512};
    const auto V = static_cast<size_t>(gen->vocab_size() > 0 ? gen->vocab_size() : 512);
    std::vector<std::vector<float>> steps;
    for (int32_t id : ids) {
      std::span<const float> l = gen->append(std::span<const int32_t>(&id, 1));
      steps.emplace_back(l.begin(), l.end());
    }
    gen->reset();
    // Two steps on top of each other: 4 tokens, then the other 6 (rows of the second step continue).
    std::span<const float> a = gen->append_all_logits(std::span<const int32_t>(ids).first(4));
    ASSERT_EQ(a.size(), 4 * V);
    std::vector<float> first(a.begin(), a.end());
    std::span<const float> b = gen->append_all_logits(std::span<const int32_t>(ids).subspan(4));
    ASSERT_EQ(b.size(), 6 * V);
    EXPECT_EQ(gen->length(), 10);
    for (size_t i = 0; i < ids.size(); ++i) {
      std::span<const float> row =
          i < 4 ? std::span<const float>(first).subspan(i * V, V) : b.subspan((i - 4) * V, V);
      EXPECT_LT(max_abs_diff(row, steps[i]), 1e-3f) << "position " << i;
    }
    EXPECT_EQ(max_abs_diff(gen->last_logits(), b.subspan(5 * V, V)), 0.0f);
    // A decode step after it: the last row only, as before.
    const int32_t next = 300;
    std::span<const float> d = gen->append(std::span<const int32_t>(&next, 1));
    EXPECT_EQ(d.size(), V);
    gen->reset();
    std::vector<int32_t> all = ids;
    all.push_back(next);
    std::span<const float> whole = gen->append(all);
    EXPECT_LT(max_abs_diff(d, whole), 1e-3f);
  }
}

}  // namespace
}  // namespace nbits::llm
