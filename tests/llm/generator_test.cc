#include "llm/generator.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "base/error.h"
#include "fake_session.h"
#include "support/alloc_counter.h"

namespace nbits::llm {
namespace {

using testing::FakeSession;

GenaiConfig fake_config(std::vector<int64_t> eos = {49}) {
  GenaiConfig c;
  c.path = "genai_config.json";
  c.context_length = 64;
  c.vocab_size = FakeSession::kVocab;
  c.eos_token_ids = std::move(eos);
  c.head_size = 4;
  c.num_attention_heads = 2;
  c.num_key_value_heads = 1;
  c.num_hidden_layers = FakeSession::kLayers;
  return c;
}

struct Fixture {
  FakeSession* fake;
  std::unique_ptr<Generator> gen;
};

Fixture make(int64_t max_length = 0, std::vector<int64_t> eos = {49}) {
  auto s = std::make_unique<FakeSession>();
  FakeSession* raw = s.get();
  return {raw, std::make_unique<Generator>(fake_config(std::move(eos)), std::move(s), max_length)};
}

// The greedy continuation the fake model's rule gives.
std::vector<int32_t> expected(std::vector<int32_t> cache, int n) {
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(FakeSession::predict(cache));
    cache.push_back(out.back());
  }
  return out;
}

TEST(Generator, GreedyFollowsTheModelThroughTheSharedCache) {
  auto f = make();
  Sampler greedy;
  const std::vector<int32_t> prompt = {3, 1, 4, 1, 5};
  auto exp = expected(prompt, 6);
  ASSERT_EQ(std::find(exp.begin(), exp.end(), 49), exp.end()) << "pick a prompt that avoids eos";
  std::vector<int32_t> streamed;
  auto r = f.gen->generate(prompt, 6, greedy, [&](int32_t t) {
    streamed.push_back(t);
    return true;
  });
  EXPECT_EQ(r.ids, exp);
  EXPECT_EQ(streamed, exp);
  EXPECT_EQ(r.stop, StopReason::kMaxTokens);
  EXPECT_EQ(f.fake->runs, 1 + 5);  // one prefill step, then one step per token but the last
  EXPECT_EQ(f.gen->length(), 5 + 5);
  EXPECT_EQ(f.gen->pending(), exp.back());
  EXPECT_EQ(f.gen->stats().prefill_tokens, 5);
  EXPECT_EQ(f.gen->stats().decode_tokens, 5);
}

TEST(Generator, ChunkedPrefillEqualsOneStep) {
  auto a = make(), b = make();
  const std::vector<int32_t> p = {7, 8, 9, 10, 11, 12};
  auto la = a.gen->append(p);
  const int32_t next_a = argmax(la);
  b.gen->append(std::span(p).first(2));
  b.gen->append(std::span(p).subspan(2, 3));
  EXPECT_EQ(b.fake->last_S, 3);
  EXPECT_EQ(b.fake->last_T, 5);
  const int32_t next_b = argmax(b.gen->append(std::span(p).subspan(5)));
  EXPECT_EQ(next_a, next_b);
  EXPECT_EQ(next_a, FakeSession::predict(p));
}

// append() runs a prompt longer than prefill_chunk() in steps of it, each on top of the last.
TEST(Generator, AppendSplitsALongPromptIntoPrefillChunks) {
  auto f = make();
  EXPECT_EQ(f.gen->prefill_chunk(), Generator::kPrefillChunk);
  f.gen->set_prefill_chunk(4);
  const std::vector<int32_t> p = {7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  const int32_t next = argmax(f.gen->append(p));
  EXPECT_EQ(next, FakeSession::predict(p));
  EXPECT_EQ(f.fake->runs, 3);  // 3 + 3 + 4: near-equal steps of at most 4
  EXPECT_EQ(f.fake->last_S, 4);
  EXPECT_EQ(f.fake->last_T, 10);
  EXPECT_EQ(f.gen->length(), 10);
  f.gen->set_prefill_chunk(0);  // one step
  f.gen->reset();
  EXPECT_EQ(argmax(f.gen->append(p)), next);
  EXPECT_EQ(f.fake->last_S, 10);
  EXPECT_THROW(f.gen->set_prefill_chunk(-1), Error);
}

TEST(Generator, MultiTurnPrefillsOnlyNewTokensAfterThePendingOne) {
  auto f = make();
  Sampler greedy;
  std::vector<int32_t> history = {2, 3};
  auto r1 = f.gen->generate(history, 4, greedy);
  history.insert(history.end(), r1.ids.begin(), r1.ids.end());
  const std::vector<int32_t> turn2 = {5, 6, 7};
  auto r2 = f.gen->generate(turn2, 3, greedy);
  EXPECT_EQ(f.gen->stats().prefill_tokens, 2 + 1 + 3);
  history.insert(history.end(), turn2.begin(), turn2.end());
  EXPECT_EQ(r2.ids, expected(history, 3));
}

TEST(Generator, StopsAtEos) {
  const std::vector<int32_t> prompt = {1, 2};
  auto exp = expected(prompt, 8);
  auto f = make(0, {exp[3]});
  Sampler greedy;
  auto r = f.gen->generate(prompt, 8, greedy);
  EXPECT_EQ(r.stop, StopReason::kEos);
  size_t first = std::find(exp.begin(), exp.end(), exp[3]) - exp.begin();
  EXPECT_EQ(r.ids, std::vector<int32_t>(exp.begin(), exp.begin() + static_cast<ptrdiff_t>(first) + 1));
}

TEST(Generator, ContextLimits) {
  auto f = make(8);
  EXPECT_EQ(f.gen->capacity(), 8);
  std::vector<int32_t> nine(9, 1);
  try {
    f.gen->append(nine);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "prompt of 9 tokens does not fit the context of 8");
  }
  Sampler greedy;
  auto r = f.gen->generate(std::vector<int32_t>{1, 2, 3}, 100, greedy);
  EXPECT_EQ(r.stop, StopReason::kContextFull);
  EXPECT_EQ(f.gen->length(), 8);
  EXPECT_EQ(r.ids.size(), 6u);
  EXPECT_THROW(f.gen->append(std::vector<int32_t>{1}), Error);
  f.gen->truncate(2);
  EXPECT_EQ(f.gen->length(), 2);
  EXPECT_EQ(argmax(f.gen->append(std::vector<int32_t>{3})), FakeSession::predict({1, 2, 3}));
  f.gen->reset();
  EXPECT_EQ(f.gen->length(), 0);
  EXPECT_THROW(f.gen->append(std::vector<int32_t>{50}), Error);  // out of the vocabulary
  EXPECT_THROW(f.gen->append(std::vector<int32_t>{-1}), Error);
  EXPECT_EQ(make(1000).gen->capacity(), 64);  // capped by context_length
}

TEST(Generator, MissingInputIsNamedWithItsConfigField) {
  GenaiConfig c = fake_config();
  c.num_hidden_layers = 3;
  try {
    Generator g(c, std::make_unique<FakeSession>());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "model.onnx has no input 'past_key_values.2.key' (named by genai_config.json field "
                 "'model.decoder.inputs.past_key_names')");
  }
  c.num_hidden_layers = 1;
  EXPECT_THROW(Generator(c, std::make_unique<FakeSession>()), Error);  // the graph has more layers
}

TEST(Generator, SteadyStateDecodeAllocatesNothing) {
  auto f = make();
  SamplerOptions o;
  o.greedy = false;
  o.top_k = 10;
  o.top_p = 0.9f;
  o.repetition_penalty = 1.1f;
  Sampler sampler(o);
  auto logits = f.gen->append(std::vector<int32_t>{1, 2, 3});
  std::vector<int32_t> one(1);
  for (int i = 0; i < 3; ++i) {  // warm-up
    one[0] = sampler.sample(logits, f.gen->tokens());
    logits = f.gen->append(one);
  }
  const int64_t before = nbits::testing::allocation_count();
  for (int i = 0; i < 20; ++i) {
    one[0] = sampler.sample(logits, f.gen->tokens());
    logits = f.gen->append(one);
  }
  EXPECT_EQ(nbits::testing::allocation_count(), before);
  // generate(): a fixed cost (the result vector), independent of the token count.
  auto cost = [&](int n) {
    f.gen->truncate(3);
    const int64_t b = nbits::testing::allocation_count();
    f.gen->generate(std::vector<int32_t>{4}, n, sampler, [](int32_t) { return true; });
    return nbits::testing::allocation_count() - b;
  };
  cost(5);
  EXPECT_EQ(cost(5), cost(40));
}

}  // namespace
}  // namespace nbits::llm
