// Batched decode across sessions (llm::Generator::append_pending, nbits::generate_next_tokens):
// B generators of one load, different prompt lengths, some greedy and some sampled with their own
// seeds, stepped together in one run per step give token for token what each gives stepped
// alone, and logits within a stated bound, on stories260K (fp32, int4 with int8 activations)
// and on a random-weight Qwen-shaped int4 genai export (make_model). The batch must really run
// (batchable(), the rows counted); graphs that cannot take one step alone, with the same result.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "graph/session.h"
#include "llm/generator.h"
#include "llm/hf_config.h"
#include "llm/sampler.h"
#include "modelgen/make_model.h"
#include "nbits/nbits.h"
#include "support/logit_diff.h"
#include "support/shared_data.h"
#include "support/small_qwen.h"

namespace nbits::llm {
namespace {

namespace fs = std::filesystem;

std::string stories(const std::string& rel) { return testing::shared_path("models/stories260K/" + rel); }

// A random-weight Qwen2-shaped int4 export (block 32, accuracy level 4: int8 activations, qkv bias,
// tied embedding), small enough for the tests.
std::string qwen_model() {
  static const testing::SmallQwen2 model("nbits_batch_decode_qwen", 256, 11);
  return model.dir;
}

SamplerOptions row_sampling(size_t i) {
  SamplerOptions o;
  if (i % 2 == 0) return o;  // greedy
  o.greedy = false;
  o.temperature = 0.9f;
  o.top_k = 50;
  o.top_p = 0.95f;
  o.seed = 1000 + i;
  return o;
}

std::vector<int32_t> prompt(size_t i, int64_t vocab) {
  const size_t len = 1 + i * 5 + (i % 3);  // 1, 7, 13, 19, 25
  std::vector<int32_t> p(len);
  Rng rng(77 + i);
  p[0] = 1;
  for (size_t k = 1; k < len; ++k)
    p[k] = 3 + static_cast<int32_t>(rng.next() % static_cast<uint64_t>(vocab - 3));
  return p;
}

using testing::rel_diff;

struct Trace {
  std::vector<int32_t> ids;
  std::vector<std::vector<float>> logits;  // after each step
};

// B generators forked from one load, each prefilled with its prompt, then `steps` decode steps:
// batched (append_pending over every row, one run) or each alone. A row stops at an eos.
std::vector<Trace> decode(const std::string& dir, size_t B, int steps, bool batched, int threads,
                          int64_t* batch_rows = nullptr, bool expect_batchable = true,
                          graph::SessionOptions::KvCache kv = graph::SessionOptions::KvCache::kModel) {
  const GenaiConfig config = load_model_config(dir);
  graph::SessionOptions so;
  so.threads = threads;
  so.kv_cache = kv;
  auto proto = graph::Session::load(config.model_path(), so);
  std::vector<std::unique_ptr<Generator>> gens;
  std::vector<Sampler> samplers;
  std::vector<Trace> out(B);
  for (size_t i = 0; i < B; ++i) {
    gens.push_back(std::make_unique<Generator>(config, proto->fork(), 128));
    samplers.emplace_back(row_sampling(i));
    gens[i]->append(prompt(i, config.vocab_size));
    const int32_t tok = gens[i]->sample_next(samplers[i]);
    out[i].ids.push_back(tok);
  }
  if (batched && B > 1) {
    EXPECT_EQ(gens[0]->batchable(), expect_batchable) << dir;
  }
  for (int step = 0; step < steps; ++step) {
    std::vector<Generator*> live;
    for (size_t i = 0; i < B; ++i)
      if (!config.is_eos(out[i].ids.back())) live.push_back(gens[i].get());
    if (live.empty()) break;
    if (batched) {
      Generator::append_pending(live);
    } else {
      for (Generator* g : live) Generator::append_pending(std::span<Generator* const>(&g, 1));
    }
    for (size_t i = 0; i < B; ++i) {
      if (config.is_eos(out[i].ids.back())) continue;
      const auto l = gens[i]->last_logits();
      out[i].logits.emplace_back(l.begin(), l.end());
      out[i].ids.push_back(gens[i]->sample_next(samplers[i]));
    }
  }
  if (batch_rows) {
    *batch_rows = 0;
    for (const auto& g : gens) *batch_rows += g->stats().batch_rows;
  }
  return out;
}

void expect_batched_equals_alone(const std::string& dir, int threads, double logit_bound,
                                 size_t max_batch = 5, bool batchable = true,
                                 graph::SessionOptions::KvCache kv = graph::SessionOptions::KvCache::kModel) {
  for (size_t B = 1; B <= max_batch; ++B) {
    SCOPED_TRACE("B=" + std::to_string(B));
    const int steps = 24;
    int64_t rows = 0;
    const std::vector<Trace> alone = decode(dir, B, steps, false, threads, nullptr, true, kv);
    const std::vector<Trace> batch = decode(dir, B, steps, true, threads, &rows, batchable, kv);
    double worst = 0;
    int64_t want_rows = 0;
    for (size_t i = 0; i < B; ++i) {
      SCOPED_TRACE("row " + std::to_string(i));
      EXPECT_EQ(batch[i].ids, alone[i].ids);
      ASSERT_EQ(batch[i].logits.size(), alone[i].logits.size());
      for (size_t s = 0; s < alone[i].logits.size(); ++s)
        worst = std::max(worst, rel_diff(batch[i].logits[s], alone[i].logits[s]));
      want_rows += static_cast<int64_t>(alone[i].logits.size());
    }
    if (B > 1 && batchable) {
      EXPECT_GT(rows, 0) << "no step ran batched";
    }
    if (!batchable) {
      EXPECT_EQ(rows, 0) << "a graph that cannot take a batch ran one";
    }
    EXPECT_LE(worst, logit_bound);
    std::printf(
        "[batch decode] %s B=%zu threads=%d: %lld of %lld rows batched, max |batched - alone| / "
        "max|logit| = %.2e\n",
        fs::path(dir).filename().c_str(), B, threads, static_cast<long long>(rows),
        static_cast<long long>(want_rows), worst);
  }
}

// Per-row results: a row's logits do not depend on the rows beside it. The fp32 export's GEMM over
// B rows and GEMV over one sum in the same order (bound: a few float roundings of max|logit|); the
// int8-activation paths quantize every row on its own (the same int8 codes whatever the batch),
// so the same bound holds.
constexpr double kLogitBound = 1e-5;

TEST(BatchDecode, Stories260KFp32BatchedEqualsAlone) {
  NBITS_REQUIRE_SHARED(stories("onnx_fp32/model.onnx"));
  expect_batched_equals_alone(stories("onnx_fp32"), 1, kLogitBound);
}

TEST(BatchDecode, Stories260KInt4BatchedEqualsAlone) {
  NBITS_REQUIRE_SHARED(stories("onnx_int4/model.onnx"));
  expect_batched_equals_alone(stories("onnx_int4"), 1, kLogitBound);
  expect_batched_equals_alone(stories("onnx_int4"), 2, kLogitBound);
}

// --kv-cache q8: each row's int8 cache rows apart (Tensor::rows), read by the same kernels.
TEST(BatchDecode, Stories260KQ8CacheBatchedEqualsAlone) {
  NBITS_REQUIRE_SHARED(stories("onnx_fp32/model.onnx"));
  expect_batched_equals_alone(stories("onnx_fp32"), 1, kLogitBound, 3, true,
                              graph::SessionOptions::KvCache::kQ8);
}

TEST(BatchDecode, QwenShapedInt4BatchedEqualsAlone) {
  expect_batched_equals_alone(qwen_model(), 1, kLogitBound);
  expect_batched_equals_alone(qwen_model(), 2, kLogitBound);
}

std::string cache_dir(const char* sub) {
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "/root") + "/.cache/nbits/" + sub;
}

// Exports from ~/.cache/nbits (tools that make them: tests/llm builder_exports_test.cc,
// optimum_exports_test.cc): onnxruntime-genai builder GroupQueryAttention exports take the batch
// (an fp16 one: fp16 KV cache rows and fp16 logits); an Optimum export (plain ops rewritten by
// fuse_optimum_attention, batch 1 only) is not batchable and steps one by one, with the same ids.
TEST(BatchDecode, ExportsBatchedOrAlone) {
  struct Case {
    std::string dir;
    bool batchable;
  };
  const Case cases[] = {{cache_dir("builder-models/qwen2_int4"), true},
                        {cache_dir("builder-models/llama_fp16"), true},
                        {cache_dir("optimum-models/qwen2"), false}};
  int found = 0;
  for (const Case& c : cases) {
    if (!fs::exists(c.dir)) continue;
    ++found;
    SCOPED_TRACE(c.dir);
    expect_batched_equals_alone(c.dir, 1, kLogitBound, 3, c.batchable);
  }
  if (found == 0) GTEST_SKIP() << "no exports under " << cache_dir("");
}

// graph::Tensor::rows is accepted only where every reader (and the producer) takes it: the cache
// inputs/outputs of GroupQueryAttention, not input_ids or the logits.
TEST(BatchDecode, RowsApartOnlyWhereTheNodesTakeThem) {
  const GenaiConfig config = load_model_config(qwen_model());
  auto s = graph::Session::load(config.model_path());
  EXPECT_TRUE(s->takes_row_pointers(format_layer_name(config.past_key_pattern, 1)));
  EXPECT_TRUE(s->takes_row_pointers(format_layer_name(config.present_value_pattern, 0)));
  EXPECT_FALSE(s->takes_row_pointers(config.input_ids_name));
  EXPECT_FALSE(s->takes_row_pointers(config.logits_name));
  EXPECT_FALSE(s->takes_row_pointers("no such name"));
  int64_t ids[2] = {5, 6};
  void* rows[2] = {&ids[0], &ids[1]};
  graph::Tensor t{graph::DType::kI64, graph::Shape{2, 1}, ids};
  t.rows = rows;
  EXPECT_THROW(s->bind_input(config.input_ids_name, t), Error);
}

// The public API: generate_next_tokens over Generators with their own options equals each
// generate_next_token() alone; bad lists are refused before anything runs.
TEST(BatchDecode, PublicApiGenerateNextTokens) {
  ModelOptions mo;
  mo.threads = 1;
  auto model = Model::load(qwen_model(), mo);
  auto options = [](size_t i) {
    GenerationOptions go;
    go.temperature = i % 2 ? 0.8f : 0.0f;
    go.top_k = 40;
    go.seed = 5 + i;
    go.context = 96;
    go.max_length = 40 + static_cast<int64_t>(i) * 7;  // rows finish at different steps
    return go;
  };
  const size_t B = 4;
  std::vector<std::vector<int32_t>> want(B);
  for (size_t i = 0; i < B; ++i) {
    nbits::Generator g(model, options(i));
    g.append_tokens(prompt(i, model->vocab_size()));
    while (!g.is_done()) g.generate_next_token();
    want[i] = g.sequence();
  }
  std::vector<std::unique_ptr<nbits::Generator>> gens;
  for (size_t i = 0; i < B; ++i) {
    gens.push_back(std::make_unique<nbits::Generator>(model, options(i)));
    gens[i]->append_tokens(prompt(i, model->vocab_size()));
  }
  while (true) {
    std::vector<nbits::Generator*> live;
    for (auto& g : gens)
      if (!g->is_done()) live.push_back(g.get());
    if (live.empty()) break;
    nbits::generate_next_tokens(live);
  }
  for (size_t i = 0; i < B; ++i) EXPECT_EQ(gens[i]->sequence(), want[i]) << "row " << i;

  nbits::Generator* done = gens[0].get();
  nbits::Generator fresh(model, options(0));
  fresh.append_tokens(prompt(1, model->vocab_size()));
  const std::vector<int32_t> before = fresh.sequence();
  std::vector<nbits::Generator*> bad = {&fresh, done};
  EXPECT_THROW(nbits::generate_next_tokens(bad), Error);
  bad = {&fresh, &fresh};
  EXPECT_THROW(nbits::generate_next_tokens(bad), Error);
  auto other = Model::load(qwen_model(), mo);
  nbits::Generator elsewhere(other, options(0));
  elsewhere.append_tokens(prompt(0, model->vocab_size()));
  bad = {&fresh, &elsewhere};
  EXPECT_THROW(nbits::generate_next_tokens(bad), Error);
  EXPECT_EQ(fresh.sequence(), before) << "a refused batch changed a generator";
  nbits::generate_next_tokens(std::span<nbits::Generator* const>());  // nothing to do
}

}  // namespace
}  // namespace nbits::llm
