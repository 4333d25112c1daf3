// The Generator on the real stories260K exports: greedy ids against ONNX
// Runtime, chunked prefill against one-step prefill, and no allocation per
// decode step with the real Session.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

#include "base/mapped_file.h"
#include "llm/generator.h"
#include "support/alloc_counter.h"
#include "support/shared_data.h"

namespace nbits::llm {
namespace {

std::string stories(const std::string& rel) { return testing::shared_path("models/stories260K/" + rel); }

std::vector<int32_t> ort_seq(const std::string& key) {
  auto ref = nlohmann::json::parse(read_text_file(stories("reference/onnx_greedy_ort.json")));
  return ref.at(key).at("seq").get<std::vector<int32_t>>();
}

TEST(StoriesGenerator, GreedyMatchesOnnxRuntimeFromAPrompt) {
  NBITS_REQUIRE_SHARED(stories("reference/onnx_greedy_ort.json"));
  auto gen = Generator::load(stories("onnx_int4"));
  const std::vector<int32_t> seq = ort_seq("int4|Once upon a time");
  const std::vector<int32_t> prompt(seq.begin(), seq.begin() + 5);  // BOS + "Once upon a time"
  Sampler greedy;
  auto r = gen->generate(prompt, 32, greedy);
  EXPECT_EQ(r.ids, std::vector<int32_t>(seq.begin() + 5, seq.begin() + 37));
  EXPECT_EQ(gen->stats().prefill_tokens, 5);
  EXPECT_EQ(gen->stats().decode_tokens, 31);
  EXPECT_GT(gen->stats().decode_ms_per_token(), 0.0);
}

TEST(StoriesGenerator, ChunkedPrefillMatchesOneStep) {
  NBITS_REQUIRE_SHARED(stories("onnx_fp32/model.onnx"));
  const std::vector<int32_t> seq = ort_seq("fp32|");
  const std::vector<int32_t> prompt(seq.begin(), seq.begin() + 24);
  auto one = Generator::load(stories("onnx_fp32"));
  auto chunked = Generator::load(stories("onnx_fp32"));
  const auto a = one->append(prompt);
  const std::vector<float> la(a.begin(), a.end());
  chunked->append(std::span(prompt).first(7));
  chunked->append(std::span(prompt).subspan(7, 1));
  const auto b = chunked->append(std::span(prompt).subspan(8));
  ASSERT_EQ(la.size(), b.size());
  double max_diff = 0;
  for (size_t i = 0; i < la.size(); ++i) max_diff = std::max(max_diff, double(std::fabs(la[i] - b[i])));
  EXPECT_LT(max_diff, 1e-4);
  EXPECT_EQ(argmax(la), seq[24]);
  EXPECT_EQ(argmax(b), seq[24]);
}

TEST(StoriesGenerator, SteadyStateDecodeAllocatesNothing) {
  NBITS_REQUIRE_SHARED(stories("onnx_int4/model.onnx"));
  graph::SessionOptions so;
  so.threads = 2;
  auto gen = Generator::load(stories("onnx_int4"), so);
  SamplerOptions o;
  o.greedy = false;
  o.top_k = 40;
  o.top_p = 0.9f;
  o.seed = 1;
  Sampler sampler(o);
  auto logits = gen->append(std::vector<int32_t>{1, 403, 407});
  std::vector<int32_t> one(1);
  for (int i = 0; i < 4; ++i) {  // warm-up: the first decode shapes
    one[0] = sampler.sample(logits, gen->tokens());
    logits = gen->append(one);
  }
  const int64_t before = testing::allocation_count();
  for (int i = 0; i < 32; ++i) {
    one[0] = sampler.sample(logits, gen->tokens());
    logits = gen->append(one);
  }
  EXPECT_EQ(testing::allocation_count() - before, 0) << "allocations in 32 decode steps";
}

}  // namespace
}  // namespace nbits::llm
