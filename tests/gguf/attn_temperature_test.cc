// mistral3's attention temperature (ops/position_scale.cc on q, gguf/rope_scaling.h's table) on the
// tiny mistral3 file, whose floor is 8 positions: the graph scales q only where the table departs
// from 1 within the capacity, a prompt run at once equals it token by token and in chunks (each
// token's position read from seqlens_k), and a batched decode step equals each row alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf_test_data.h"
#include "gguf/model_builder.h"
#include "gguf/rope_scaling.h"
#include "graph/session.h"
#include "llm/generator.h"
#include "llm/sampler.h"

namespace nbits::gguf {
namespace {

std::unique_ptr<llm::Generator> load_mistral3(int64_t capacity) {
  GgufModel g = build_model(File::open(test::tiny_model("mistral3")), 4, capacity);
  graph::SessionOptions so;
  so.max_positions = capacity;
  return std::make_unique<llm::Generator>(g.config, graph::Session::load(std::move(g.model), so), capacity);
}

std::vector<float> last(std::span<const float> l) { return {l.begin(), l.end()}; }

double rel(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    d = std::max(d, static_cast<double>(std::fabs(a[i] - b[i])));
    m = std::max(m, static_cast<double>(std::fabs(b[i])));
  }
  return d / m;
}

const std::vector<int32_t> kIds = {504, 3575, 282,  4649, 314, 1604, 3987, 46477, 24,   94,
                                   727, 6403, 1980, 253,  655, 28,   281,  253,   1165, 6560};

int count(const GgufModel& g, const char* op) {
  return static_cast<int>(std::count_if(g.model.graph.nodes.begin(), g.model.graph.nodes.end(),
                                        [&](const onnx::Node& n) { return n.op_type == op; }));
}

TEST(GgufAttnTemperature, TableAndGraph) {
  NBITS_REQUIRE_SHARED(test::tiny_model("mistral3"));
  const GgufModel g = build_model(File::open(test::tiny_model("mistral3")), 4, 64);
  EXPECT_FLOAT_EQ(static_cast<float>(g.hp.attn_temp_scale), 0.1f);
  EXPECT_EQ(g.hp.attn_temp_floor, 8);
  EXPECT_TRUE(g.hp.yarn);
  EXPECT_DOUBLE_EQ(g.hp.yarn_mscale, 1.0);  // yarn_log_multiplier 1: get_mscale(4, 1) / get_mscale(4, 1)
  const std::vector<float> t = attn_temperature(g.hp, 24);
  EXPECT_EQ(t[0], 1.0f);
  EXPECT_EQ(t[7], 1.0f);
  EXPECT_FLOAT_EQ(t[8], static_cast<float>(1 + 0.1 * std::log(2.0)));
  EXPECT_FLOAT_EQ(t[23], static_cast<float>(1 + 0.1 * std::log(3.0)));
  EXPECT_EQ(count(g, "PositionScale"), 2);  // one per layer
  // Within the first 8 positions the table is all 1: no node.
  EXPECT_EQ(count(build_model(File::open(test::tiny_model("mistral3")), 4, 8), "PositionScale"), 0);
}

TEST(GgufAttnTemperature, PromptAtOnceEqualsTokenByTokenAndChunks) {
  NBITS_REQUIRE_SHARED(test::tiny_model("mistral3"));
  auto a = load_mistral3(64), b = load_mistral3(64);
  const std::vector<float> whole = last(a->append(kIds));
  std::vector<float> steps;
  for (const int32_t id : kIds) steps = last(b->append(std::span<const int32_t>(&id, 1)));
  EXPECT_LT(rel(steps, whole), 1e-5);
  b->reset();
  (void)b->append(std::span<const int32_t>(kIds.data(), 6));  // positions 6..19 in the second chunk
  EXPECT_LT(rel(last(b->append(std::span<const int32_t>(kIds.data() + 6, kIds.size() - 6))), whole), 1e-5);
}

TEST(GgufAttnTemperature, BatchedDecodeStepEqualsEachAlone) {
  NBITS_REQUIRE_SHARED(test::tiny_model("mistral3"));
  std::vector<std::unique_ptr<llm::Generator>> batch, alone;
  llm::Sampler greedy{llm::SamplerOptions{}};
  for (int i = 0; i < 4; ++i) {
    auto& g = (i < 2 ? batch : alone).emplace_back(load_mistral3(64));
    // Rows of different lengths (6 and 11), so their positions cross the floor at different steps.
    const std::vector<int32_t> prompt(kIds.begin(), kIds.begin() + (i % 2 == 0 ? 6 : 11));
    (void)g->append(prompt);
    (void)g->sample_next(greedy);
  }
  ASSERT_TRUE(batch[0]->batchable());
  for (int step = 0; step < 6; ++step) {
    llm::Generator* both[] = {batch[0].get(), batch[1].get()};
    llm::Generator::append_pending(both);
    for (int i = 0; i < 2; ++i) {
      llm::Generator* one = alone[static_cast<size_t>(i)].get();
      llm::Generator::append_pending(std::span<llm::Generator* const>(&one, 1));
      EXPECT_LT(rel(last(batch[static_cast<size_t>(i)]->last_logits()), last(one->last_logits())), 1e-5)
          << "row " << i << " step " << step;
      EXPECT_EQ(batch[static_cast<size_t>(i)]->sample_next(greedy), one->sample_next(greedy));
    }
  }
  EXPECT_EQ(batch[0]->stats().batch_rows, 6);  // each of the six steps ran as a batch
}

}  // namespace
}  // namespace nbits::gguf
