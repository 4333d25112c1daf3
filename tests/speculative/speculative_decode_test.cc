// Exact verification: a verify step's rows are one-token decode's logits bit for bit, and
// speculative decoding gives plain decoding's tokens, stop reason, pending token and cache, for
// greedy and seeded sampling, whatever the drafter proposes (an oracle that is right, wrong at
// chosen places, or prompt lookup), on stories260K (fp32; int4 with int8 activations; int8)
// and on a random-weight Qwen-shaped int4 export at a context long enough for decode's key
// split across threads (>= 512 keys, fewer kv heads than threads).
#include "speculative/speculative_decode.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "graph/session.h"
#include "llm/generator.h"
#include "llm/hf_config.h"
#include "llm/sampler.h"
#include "llm/token_constraint.h"
#include "speculative/draft_model.h"
#include "speculative/prompt_lookup.h"
#include "support/shared_data.h"
#include "support/small_qwen.h"

namespace nbits::speculative {
namespace {

using llm::GenerateResult;
using llm::Generator;
using llm::Sampler;
using llm::SamplerOptions;

std::string stories(const std::string& v) {
  const std::string dir = testing::shared_path("models/stories260K/" + v);
  return dir;
}

std::string qwen_model() {
  static const testing::SmallQwen2 model("nbits_speculative_qwen", 1024, 5);
  return model.dir;
}

std::unique_ptr<Generator> load(const std::string& dir, int threads) {
  graph::SessionOptions so;
  so.threads = threads;
  return Generator::load(dir, so);
}

// Proposes the continuation a plain run produced (`truth`, after `prompt_len` tokens), with the
// token at draft offset `wrong_at` changed on every `wrong_every`-th proposal (0: never wrong).
class Oracle final : public Drafter {
 public:
  Oracle(std::vector<int32_t> truth, size_t prompt_len, int64_t wrong_every, int64_t wrong_at, int32_t vocab)
      : truth_(std::move(truth)),
        prompt_len_(prompt_len),
        every_(wrong_every),
        at_(wrong_at),
        vocab_(vocab) {}
  void propose(std::span<const int32_t> context, int64_t max_tokens, std::vector<int32_t>& out) override {
    out.clear();
    ++calls_;
    const size_t p = context.size() - prompt_len_;  // generated tokens in the context
    for (int64_t i = 0; i < max_tokens && p + static_cast<size_t>(i) < truth_.size(); ++i)
      out.push_back(truth_[p + static_cast<size_t>(i)]);
    if (every_ > 0 && calls_ % every_ == 0 && at_ < static_cast<int64_t>(out.size()))
      out[static_cast<size_t>(at_)] = (out[static_cast<size_t>(at_)] + 1) % vocab_;
  }
  bool cheap() const override { return true; }
  const char* name() const override { return "oracle"; }

 private:
  std::vector<int32_t> truth_;
  size_t prompt_len_;
  int64_t every_, at_, calls_ = 0;
  int32_t vocab_;
};

struct Outcome {
  GenerateResult r;
  std::vector<int32_t> cached;
  int32_t pending = -1;
};

Outcome plain(Generator& g, const std::vector<int32_t>& prompt, int64_t n, const SamplerOptions& so,
              int64_t stop_after = -1) {
  g.reset();
  Sampler s(so);
  int64_t seen = 0;
  Outcome o;
  o.r = g.generate(prompt, n, s, [&](int32_t) { return stop_after < 0 || ++seen < stop_after; });
  o.cached.assign(g.tokens().begin(), g.tokens().end());
  o.pending = g.pending();
  return o;
}

Outcome speculate(Generator& g, Drafter& d, int64_t max_draft, const std::vector<int32_t>& prompt, int64_t n,
                  const SamplerOptions& so, int64_t stop_after = -1, SpeculativeStats* stats = nullptr) {
  g.reset();
  Sampler s(so);
  SpeculativeDecoder dec(d, max_draft);
  int64_t seen = 0;
  Outcome o;
  o.r = dec.generate(g, prompt, n, s, [&](int32_t) { return stop_after < 0 || ++seen < stop_after; });
  o.cached.assign(g.tokens().begin(), g.tokens().end());
  o.pending = g.pending();
  if (stats) *stats = dec.stats();
  return o;
}

void expect_same(const Outcome& a, const Outcome& b, const std::string& what) {
  EXPECT_EQ(a.r.ids, b.r.ids) << what;
  EXPECT_EQ(static_cast<int>(a.r.stop), static_cast<int>(b.r.stop)) << what;
  EXPECT_EQ(a.cached, b.cached) << what;
  EXPECT_EQ(a.pending, b.pending) << what;
}

SamplerOptions sampled(uint64_t seed) {
  SamplerOptions o;
  o.greedy = false;
  o.temperature = 0.8f;
  o.top_k = 40;
  o.top_p = 0.95f;
  o.repetition_penalty = 1.1f;
  o.presence_penalty = 0.2f;
  o.seed = seed;
  return o;
}

// Row i of a verify step equals, bit for bit, the logits one-token decode gives after ids[i].
void expect_verify_rows_bitwise(const std::string& dir, int threads, const std::vector<int32_t>& prompt,
                                int steps) {
  auto a = load(dir, threads), b = load(dir, threads);
  ASSERT_TRUE(a->batchable()) << dir;
  Sampler greedy;
  a->append(prompt);
  std::vector<int32_t> run;  // the tokens decode runs after the prompt
  std::vector<std::vector<float>> want;
  for (int i = 0; i < steps; ++i) {
    run.push_back(a->sample_next(greedy));
    std::span<const float> l = a->append(std::span<const int32_t>(&run.back(), 1));
    want.emplace_back(l.begin(), l.end());
  }
  b->append(prompt);
  const std::span<const float> rows = b->verify(run);
  const auto V = static_cast<size_t>(b->vocab_size());
  ASSERT_EQ(rows.size(), V * run.size());
  for (size_t i = 0; i < run.size(); ++i)
    EXPECT_EQ(std::memcmp(rows.data() + i * V, want[i].data(), V * sizeof(float)), 0)
        << dir << ": verify row " << i << " differs from one-token decode (threads " << threads << ")";
}

std::vector<int32_t> story_prompt() { return {1, 403, 407, 261, 378, 432, 383, 286, 261}; }

TEST(SpeculativeVerify, RowsAreOneTokenDecodeBitForBit) {
  for (const char* v : {"onnx_fp32", "onnx_int4", "onnx_int8"}) {
    const std::string dir = stories(v);
    NBITS_REQUIRE_SHARED(dir + "/genai_config.json");
    for (int threads : {1, 2}) expect_verify_rows_bitwise(dir, threads, story_prompt(), 12);
  }
}

// A draft model reports the time it spent catching up (running more than the last accepted draft
// and the token after it), which the draft length's cost model leaves out; steady-state proposals
// report none.
TEST(SpeculativeDraftModel, ReportsCatchUpOnlyWhenItRunsContextItDidNotHold) {
  const std::string dir = stories("onnx_int4");
  NBITS_REQUIRE_SHARED(dir + "/genai_config.json");
  DraftModel draft(load(dir, 1));
  std::vector<int32_t> context = story_prompt();
  ASSERT_GT(context.size(), 3u);
  std::vector<int32_t> out;
  draft.propose(context, 3, out);  // the whole prompt is new: a catch-up
  ASSERT_EQ(out.size(), 3u);
  EXPECT_GT(draft.last_catch_up_ms(), 0.0);
  // Two drafts accepted and the token after them: the draft held the first two already.
  context.insert(context.end(), out.begin(), out.begin() + 2);
  context.push_back(out[2]);
  draft.propose(context, 3, out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(draft.last_catch_up_ms(), 0.0);
  // Twelve tokens made while speculation was off: a catch-up again.
  for (int i = 0; i < 12; ++i) context.push_back(out[static_cast<size_t>(i) % out.size()]);
  draft.propose(context, 2, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_GT(draft.last_catch_up_ms(), 0.0);
  // A cheap drafter never reports one.
  PromptLookup lookup;
  EXPECT_EQ(lookup.last_catch_up_ms(), 0.0);
}

TEST(SpeculativeVerify, RowsAreOneTokenDecodeAtALongContextOnFourThreads) {
  // 600 prompt tokens: decode splits each kv head's keys across the 4 threads (2 kv heads).
  std::vector<int32_t> prompt(600);
  llm::Rng rng(3);
  prompt[0] = 1;
  for (size_t i = 1; i < prompt.size(); ++i) prompt[i] = 3 + static_cast<int32_t>(rng.next() % 997);
  expect_verify_rows_bitwise(qwen_model(), 4, prompt, 9);
  expect_verify_rows_bitwise(qwen_model(), 1, prompt, 9);
}

TEST(SpeculativeDecode, GivesPlainDecodingsTokensWhateverTheDrafts) {
  for (const char* v : {"onnx_fp32", "onnx_int4"}) {
    const std::string dir = stories(v);
    NBITS_REQUIRE_SHARED(dir + "/genai_config.json");
    auto g = load(dir, 2);
    const std::vector<int32_t> prompt = story_prompt();
    const auto vocab = static_cast<int32_t>(g->vocab_size());
    for (const SamplerOptions& so : {SamplerOptions{}, sampled(7), sampled(8)}) {
      const Outcome want = plain(*g, prompt, 48, so);
      ASSERT_EQ(want.r.ids.size(), 48u) << v;  // stories260K does not end that early
      // Right every time; wrong at the first, third or a late draft token on some proposals.
      for (auto [every, at] : std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {1, 0}, {2, 2}, {3, 5}}) {
        Oracle oracle(want.r.ids, prompt.size(), every, at, vocab);
        for (int64_t max_draft : {1, 4, 8}) {
          SpeculativeStats st;
          const Outcome got = speculate(*g, oracle, max_draft, prompt, 48, so, -1, &st);
          const std::string what = std::string(v) + (so.greedy ? " greedy" : " sampled") + " wrong every " +
                                   std::to_string(every) + " at " + std::to_string(at) + ", max draft " +
                                   std::to_string(max_draft);
          expect_same(got, want, what);
          EXPECT_GT(st.verify_steps, 0) << what;
          if (every == 0) {
            EXPECT_EQ(st.accepted, st.drafted) << what;
          }
        }
      }
      PromptLookup lookup(1, 3);
      expect_same(speculate(*g, lookup, 6, prompt, 48, so), want, std::string(v) + " prompt lookup");
    }
  }
}

TEST(SpeculativeDecode, StopsWherePlainDecodingStops) {
  const std::string dir = stories("onnx_int4");
  NBITS_REQUIRE_SHARED(dir + "/genai_config.json");
  auto g = load(dir, 1);
  const std::vector<int32_t> prompt = story_prompt();
  const auto vocab = static_cast<int32_t>(g->vocab_size());
  const Outcome full = plain(*g, prompt, 40, {});
  Oracle right(full.r.ids, prompt.size(), 0, 0, vocab);
  // max_new_tokens inside a verify step, a callback that stops on an accepted draft.
  for (int64_t n : {1, 2, 5, 13})
    expect_same(speculate(*g, right, 8, prompt, n, {}), plain(*g, prompt, n, {}), "n");
  for (int64_t stop : {1, 3, 7}) {
    expect_same(speculate(*g, right, 8, prompt, 40, {}, stop), plain(*g, prompt, 40, {}, stop),
                "callback stop after " + std::to_string(stop));
  }
  // The context fills up inside a verify step.
  {
    graph::SessionOptions so;
    auto cfg = llm::load_model_config(dir);
    Generator tiny(cfg, graph::Session::load(cfg.model_path(), so), 20);
    const Outcome want = plain(tiny, prompt, 40, {});
    EXPECT_EQ(static_cast<int>(want.r.stop), static_cast<int>(llm::StopReason::kContextFull));
    Oracle o(want.r.ids, prompt.size(), 0, 0, vocab);
    expect_same(speculate(tiny, o, 8, prompt, 40, {}), want, "context full");
  }
  // A later call goes on from the pending token exactly as plain decoding does.
  g->reset();
  Sampler s1;
  g->generate(prompt, 10, s1);
  const GenerateResult more_plain = g->generate({}, 10, s1);
  Oracle o(full.r.ids, prompt.size(), 2, 1, vocab);
  SpeculativeDecoder dec(o, 4);
  g->reset();
  Sampler s2;
  dec.generate(*g, prompt, 10, s2);
  const GenerateResult more_spec = dec.generate(*g, {}, 10, s2);
  EXPECT_EQ(more_spec.ids, more_plain.ids);
}

// A constraint scripted by position (tokens accepted so far): positions 3..7 allow one token each
// (forced), position 12 allows two and forced() proposes the second (a tokenization the model
// may not pick), position 20 allows three and forced() proposes nothing; the rest allow all.
class ScriptedConstraint final : public llm::TokenConstraint {
 public:
  explicit ScriptedConstraint(size_t vocab) : vocab_(vocab), words_((vocab + 31) / 32) {}
  std::span<const uint32_t> allowed() override {
    const std::vector<int32_t> only = allowed_at(pos_);
    std::fill(words_.begin(), words_.end(), only.empty() ? ~0u : 0u);
    for (int32_t t : only) words_[static_cast<size_t>(t) / 32] |= 1u << (t % 32);
    return words_;
  }
  void accept(int32_t token) override {
    const std::vector<int32_t> only = allowed_at(pos_);
    EXPECT_TRUE(only.empty() || std::find(only.begin(), only.end(), token) != only.end())
        << "token " << token << " at " << pos_;
    ++pos_;
  }
  void rollback(int64_t n) override { pos_ -= n; }
  void forced(int64_t max_tokens, std::vector<int32_t>& out) override {
    out.clear();
    for (int64_t p = pos_; static_cast<int64_t>(out.size()) < max_tokens; ++p) {
      const std::vector<int32_t> only = allowed_at(p);
      if (only.size() == 1 || p == 12) {
        out.push_back(only.back());
      } else {
        break;
      }
    }
  }
  int64_t pos() const { return pos_; }

 private:
  std::vector<int32_t> allowed_at(int64_t p) const {
    if (p >= 3 && p <= 7) return {static_cast<int32_t>(100 + 37 * p) % static_cast<int32_t>(vocab_)};
    if (p == 12) return {50, 60};
    if (p == 20) return {70, 80, 90};
    return {};
  }
  size_t vocab_;
  std::vector<uint32_t> words_;
  int64_t pos_ = 0;
};

// Constrained decoding's fast-forward: the tokens the constraint forces lead each proposal (with
// no drafter, and before prompt lookup's drafts) and run in verify steps; the tokens, stop
// reason, cache and the constraint's position are plain constrained decoding's.
TEST(SpeculativeDecode, ForcedTokensOfAConstraintRunInVerifyStepsWithPlainTokens) {
  const std::string dir = stories("onnx_int4");
  NBITS_REQUIRE_SHARED(dir + "/genai_config.json");
  auto g = load(dir, 2);
  const std::vector<int32_t> prompt = story_prompt();
  const auto V = static_cast<size_t>(g->vocab_size());
  for (const SamplerOptions& so : {SamplerOptions{}, sampled(3), sampled(4)}) {
    auto run = [&](Drafter* d, int64_t max_draft, SpeculativeStats* st, int64_t* pos) {
      g->reset();
      Sampler s(so);
      auto c = std::make_shared<ScriptedConstraint>(V);
      s.set_constraint(c);
      Outcome o;
      if (d == nullptr) {
        o.r = g->generate(prompt, 30, s);
      } else {
        SpeculativeDecoder dec(*d, max_draft);
        o.r = dec.generate(*g, prompt, 30, s);
        *st = dec.stats();
      }
      o.cached.assign(g->tokens().begin(), g->tokens().end());
      o.pending = g->pending();
      *pos = c->pos();
      return o;
    };
    SpeculativeStats unused;
    int64_t want_pos = 0;
    const Outcome want = run(nullptr, 0, &unused, &want_pos);
    ASSERT_EQ(want.r.ids.size(), 30u);
    const std::string what = so.greedy ? "greedy" : "sampled";
    NoDrafts none;
    PromptLookup lookup(1, 3);
    for (auto [d, max_draft] : std::vector<std::pair<Drafter*, int64_t>>{{&none, 0}, {&lookup, 4}}) {
      SpeculativeStats st;
      int64_t pos = 0;
      expect_same(run(d, max_draft, &st, &pos), want, what + " " + d->name());
      EXPECT_EQ(pos, want_pos) << what;
      EXPECT_GE(st.forced, 5) << what;  // positions 3..7 at least, in one or more verify steps
      EXPECT_GE(st.forced_kept, 5) << what;
      EXPECT_LE(st.forced_kept, st.forced) << what;
      EXPECT_GT(st.verify_steps, 0) << what;
      if (max_draft == 0) {
        EXPECT_EQ(st.drafted, 0) << what;
      }
    }
  }
}

TEST(SpeculativeDecode, ALongContextOnFourThreadsGivesPlainTokens) {
  auto g = load(qwen_model(), 4);
  std::vector<int32_t> prompt(560);
  llm::Rng rng(9);
  prompt[0] = 1;
  // A repeated stretch, so prompt lookup finds matches.
  for (size_t i = 1; i < 280; ++i) prompt[i] = 3 + static_cast<int32_t>(rng.next() % 997);
  for (size_t i = 280; i < prompt.size(); ++i) prompt[i] = prompt[i - 279];
  for (const SamplerOptions& so : {SamplerOptions{}, sampled(3)}) {
    const Outcome want = plain(*g, prompt, 24, so);
    Oracle oracle(want.r.ids, prompt.size(), 2, 1, static_cast<int32_t>(g->vocab_size()));
    expect_same(speculate(*g, oracle, 6, prompt, 24, so), want, "oracle");
    PromptLookup lookup(2, 4);
    expect_same(speculate(*g, lookup, 6, prompt, 24, so), want, "lookup");
  }
}

}  // namespace
}  // namespace nbits::speculative
