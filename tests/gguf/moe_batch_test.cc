// Mixture-of-experts layers in batched decode (llm::Generator::append_pending: B sessions of one
// load stepped as one run, rows grouped by expert in kernels::ExpertFfn) give each row the tokens
// and logits it gets stepped alone, on the tiny qwen3moe, qwen2moe (shared expert) and gpt-oss (biases,
// sinks, windows) files, at 1 and 2 threads: a row's experts are added in expert-index order and each row's
// int8 activations are quantized by themselves, so the bound is fp32-exact (asserted 1e-6 of max|logit|).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf_test_data.h"
#include "gguf/model_builder.h"
#include "llm/generator.h"
#include "llm/sampler.h"
#include "support/logit_diff.h"

namespace nbits::gguf {
namespace {

struct Trace {
  std::vector<int32_t> ids;
  std::vector<std::vector<float>> logits;
};

std::vector<Trace> decode(const std::string& path, size_t B, bool batched, int threads,
                          int64_t* rows = nullptr) {
  GgufModel g = build_model(File::open(path), 4, 128);
  graph::SessionOptions so;
  so.threads = threads;
  const llm::GenaiConfig config = g.config;
  auto proto = graph::Session::load(std::move(g.model), so);
  std::vector<std::unique_ptr<llm::Generator>> gens;
  llm::Sampler greedy{llm::SamplerOptions{}};
  std::vector<Trace> out(B);
  for (size_t i = 0; i < B; ++i) {
    gens.push_back(std::make_unique<llm::Generator>(config, proto->fork(), 128));
    std::vector<int32_t> prompt = {1};
    for (size_t k = 0; k < 3 + 4 * i; ++k) prompt.push_back(static_cast<int32_t>(100 + 37 * k + 11 * i));
    gens[i]->append(prompt);
    out[i].ids.push_back(gens[i]->sample_next(greedy));
  }
  for (int step = 0; step < 12; ++step) {
    std::vector<llm::Generator*> all;
    for (auto& gen : gens) all.push_back(gen.get());
    if (batched) {
      llm::Generator::append_pending(all);
    } else {
      for (llm::Generator* one : all)
        llm::Generator::append_pending(std::span<llm::Generator* const>(&one, 1));
    }
    for (size_t i = 0; i < B; ++i) {
      const auto l = gens[i]->last_logits();
      out[i].logits.emplace_back(l.begin(), l.end());
      out[i].ids.push_back(gens[i]->sample_next(greedy));
    }
  }
  if (rows != nullptr)
    for (const auto& gen : gens) *rows += gen->stats().batch_rows;
  return out;
}

TEST(GgufMoeBatch, BatchedRowsEqualEachRowAlone) {
  for (const char* arch : {"qwen3moe", "qwen2moe", "gpt-oss"})
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::string(arch) + " threads " + std::to_string(threads));
      const std::string path = test::tiny_model(arch);
      NBITS_REQUIRE_SHARED(path);
      const size_t B = 4;
      int64_t rows = 0;
      const std::vector<Trace> alone = decode(path, B, false, threads),
                               batch = decode(path, B, true, threads, &rows);
      EXPECT_EQ(rows, static_cast<int64_t>(B) * 12);  // every step really ran as one batch
      for (size_t i = 0; i < B; ++i) {
        EXPECT_EQ(batch[i].ids, alone[i].ids) << "row " << i;
        for (size_t s = 0; s < alone[i].logits.size(); ++s)
          EXPECT_LE(testing::rel_diff(batch[i].logits[s], alone[i].logits[s]), 1e-6)
              << "row " << i << " step " << s;
      }
    }
}

}  // namespace
}  // namespace nbits::gguf
