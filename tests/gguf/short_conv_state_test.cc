// LFM2's short-convolution state in the KV cache slots (ops/short_conv.cc) on the tiny lfm2 file:
// a prompt run at once, token by token, in a batched decode step, after a rollback (rejected
// speculative tokens) and with the int8 cache of the attention layer give the same logits; the
// graph has a ShortConv on each convolution layer and attention on the others.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf_test_data.h"
#include "gguf/model_builder.h"
#include "graph/session.h"
#include "llm/generator.h"
#include "llm/sampler.h"

namespace nbits::gguf {
namespace {

std::unique_ptr<llm::Generator> load_lfm2(int64_t capacity, const std::string& kv_cache = "model") {
  GgufModel g = build_model(File::open(test::tiny_model("lfm2")), 4, capacity);
  graph::SessionOptions so;
  so.max_positions = capacity;
  so.kv_cache = graph::parse_kv_cache(kv_cache);
  return std::make_unique<llm::Generator>(g.config, graph::Session::load(std::move(g.model), so), capacity);
}

std::vector<float> last(std::span<const float> l) { return {l.begin(), l.end()}; }

// max |a - b| / max |b|
double rel(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    d = std::max(d, static_cast<double>(std::fabs(a[i] - b[i])));
    m = std::max(m, static_cast<double>(std::fabs(b[i])));
  }
  return d / m;
}

const std::vector<int32_t> kIds = {504, 3575, 282, 4649, 314, 1604, 3987, 46477, 24, 94, 727, 6403, 1980};

TEST(GgufShortConv, GraphHasAConvolutionOnEachConvolutionLayer) {
  NBITS_REQUIRE_SHARED(test::tiny_model("lfm2"));
  const GgufModel g = build_model(File::open(test::tiny_model("lfm2")));
  EXPECT_EQ(g.hp.conv_layer, (std::vector<bool>{true, true, false, true}));
  EXPECT_EQ(g.hp.conv_taps, 3);
  EXPECT_EQ(g.hp.n_head_kv, 2);
  int conv = 0, gqa = 0;
  for (const onnx::Node& n : g.model.graph.nodes) {
    conv += n.op_type == "ShortConv";
    gqa += n.op_type == "GroupQueryAttention";
  }
  EXPECT_EQ(conv, 3);
  EXPECT_EQ(gqa, 1);
}

// The state carried from step to step is what the whole prompt computes at once (int8 activations
// round per row, so each row's bits are the same either way: bounds of fp32 summation order only).
TEST(GgufShortConv, PromptAtOnceEqualsTokenByToken) {
  NBITS_REQUIRE_SHARED(test::tiny_model("lfm2"));
  auto a = load_lfm2(64), b = load_lfm2(64);
  const std::vector<float> whole = last(a->append(kIds));
  std::vector<float> steps;
  for (const int32_t id : kIds) steps = last(b->append(std::span<const int32_t>(&id, 1)));
  EXPECT_LT(rel(steps, whole), 1e-5);
  // Two chunks (the second reads the first's last two positions from the ring).
  b->reset();
  (void)b->append(std::span<const int32_t>(kIds.data(), 5));
  EXPECT_LT(rel(last(b->append(std::span<const int32_t>(kIds.data() + 5, kIds.size() - 5))), whole), 1e-5);
}

// A verify step appends several tokens and the rejected ones are dropped (Generator::truncate):
// the next step must read the state of the kept positions, not of the dropped ones. With a
// capacity of 16 the ring holds 2 * 16 * 64 / 256 = 8 positions, so a later step wraps it.
TEST(GgufShortConv, RollbackReadsTheKeptPositions) {
  NBITS_REQUIRE_SHARED(test::tiny_model("lfm2"));
  auto fresh = load_lfm2(16), g = load_lfm2(16);
  const std::vector<int32_t> kept(kIds.begin(), kIds.begin() + 9);
  const std::vector<float> want = last(fresh->append(kept));
  (void)g->append(std::span<const int32_t>(kIds.data(), 6));
  const std::vector<int32_t> drafted = {kIds[6], kIds[7], 11, 12, 13};  // 3 of 5 rejected
  (void)g->append(drafted);
  g->truncate(8);
  EXPECT_LT(rel(last(g->append(std::span<const int32_t>(&kIds[8], 1))), want), 1e-5);
  // Further steps past the ring's size still follow the fresh run.
  for (int64_t i = 9; i < static_cast<int64_t>(kIds.size()); ++i) {
    const int32_t id = kIds[static_cast<size_t>(i)];
    const std::vector<float> got = last(g->append(std::span<const int32_t>(&id, 1)));
    EXPECT_LT(rel(got, last(fresh->append(std::span<const int32_t>(&id, 1)))), 1e-5) << i;
  }
}

// Two sessions decoded in one batched step (each row its own cache slots, Tensor::rows) give what
// each gives stepped alone.
TEST(GgufShortConv, BatchedDecodeStepEqualsEachAlone) {
  NBITS_REQUIRE_SHARED(test::tiny_model("lfm2"));
  std::vector<std::unique_ptr<llm::Generator>> batch, alone;
  llm::Sampler greedy{llm::SamplerOptions{}};
  for (int i = 0; i < 4; ++i) {
    auto& g = (i < 2 ? batch : alone).emplace_back(load_lfm2(64));
    const std::vector<int32_t> prompt(kIds.begin() + 3 * (i % 2), kIds.begin() + 7 + 3 * (i % 2));
    (void)g->append(prompt);
    (void)g->sample_next(greedy);
  }
  ASSERT_TRUE(batch[0]->batchable());
  for (int step = 0; step < 4; ++step) {
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
  EXPECT_EQ(batch[0]->stats().batch_rows, 4);  // each of the four steps really ran as a batch
  EXPECT_EQ(alone[0]->stats().batch_rows, 0);
}

// --kv-cache q8 (and fp16) turn the attention layer's slots into int8 (fp16) rows; the
// convolution layers' slots change dtype with them and still hold fp32 state in their bytes.
TEST(GgufShortConv, QuantizedCacheKeepsTheConvolutionStateExact) {
  NBITS_REQUIRE_SHARED(test::tiny_model("lfm2"));
  auto f32 = load_lfm2(64);
  const std::vector<float> want = last(f32->append(kIds));
  for (const char* kv : {"q8", "f16"}) {
    auto g = load_lfm2(64, kv);
    std::vector<float> got;
    for (const int32_t id : kIds) got = last(g->append(std::span<const int32_t>(&id, 1)));
    EXPECT_LT(rel(got, want), 2e-2) << kv;  // the attention layer's rounded K/V only
  }
}

}  // namespace
}  // namespace nbits::gguf
