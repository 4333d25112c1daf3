#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "gguf/gguf_test_data.h"
#include "nbits/nbits.h"
#include "support/shared_data.h"

namespace nbits {
namespace {

std::string stories(const std::string& rel) { return testing::shared_path("models/stories260K/" + rel); }

std::shared_ptr<Model> load(const std::string& variant, int threads = 1) {
  ModelOptions mo;
  mo.threads = threads;
  return Model::load(stories(variant), mo);
}

GenerationOptions greedy(int64_t n) {
  GenerationOptions go;
  go.max_new_tokens = n;
  go.temperature = 0.0f;
  return go;
}

TEST(PublicApi, GeneratesAndContinuesTheConversation) {
  NBITS_REQUIRE_SHARED(stories("onnx_fp32/model.onnx"));
  auto model = load("onnx_fp32");
  EXPECT_EQ(model->context_length(), 512);
  EXPECT_TRUE(model->has_tokenizer());
  GenerationOptions go;
  go.max_new_tokens = 20;
  Generator gen(model, go);
  std::string streamed;
  auto r = gen.generate("", [&](std::string_view s) { streamed += s; });
  EXPECT_EQ(r.prompt_ids, std::vector<int32_t>{1});
  ASSERT_EQ(r.ids.size(), 20u);
  EXPECT_EQ(streamed, r.text);
  EXPECT_EQ(r.text.rfind("Once upon a time", 0), 0u) << r.text;
  EXPECT_EQ(model->decode(r.ids), r.text);
  const int64_t before = gen.length();
  auto r2 = gen.generate(" The end");
  // Only the pending reply token and the new text are prefilled; no BOS in the middle.
  EXPECT_EQ(r2.prompt_ids.size(), 1 + model->encode(" The end", false).size());
  EXPECT_EQ(r2.prompt_ids[0], r.ids.back());
  EXPECT_EQ(gen.length(), before + static_cast<int64_t>(r2.prompt_ids.size()) - 1 + 20);
  gen.reset();
  EXPECT_EQ(gen.length(), 0);
  EXPECT_EQ(gen.generate("").ids, r.ids);  // greedy: the same story again
  EXPECT_EQ(model->bos_token_id(), std::optional<int32_t>(1));
  EXPECT_EQ(model->token_to_id("<s>"), 1);
  EXPECT_EQ(model->token_to_id("no such token at all"), -1);
}

// A session that serves one request after another: new options, the same cache.
TEST(PublicApi, SetOptionsKeepsTheConversation) {
  NBITS_REQUIRE_SHARED(stories("onnx_int4/model.onnx"));
  auto model = load("onnx_int4");
  Generator g(model, greedy(8));
  ASSERT_EQ(g.generate("Once upon a time").ids.size(), 8u);
  const int64_t len = g.length();
  GenerationOptions o = greedy(6);
  o.frequency_penalty = 2.0f;
  o.presence_penalty = 2.0f;
  g.set_options(o);
  EXPECT_EQ(g.length(), len);
  const auto next = g.generate(" The").ids;
  EXPECT_EQ(next.size(), 6u);
  for (size_t i = 1; i < next.size(); ++i) EXPECT_NE(next[i], next[i - 1]);
  o.presence_penalty = 5.0f;
  EXPECT_THROW(g.set_options(o), Error);
}

TEST(PublicApi, DoSampleAndSeed) {
  NBITS_REQUIRE_SHARED(stories("onnx_int4/model.onnx"));
  auto model = load("onnx_int4");
  GenerationOptions go = greedy(32);
  const auto greedy_ids = Generator(model, go).generate("Once").ids;
  go.temperature.reset();
  go.do_sample = true;
  go.top_k = 0;  // the config's top_k is 1 (greedy in effect)
  go.seed = 7;
  const auto a = Generator(model, go).generate("Once").ids;
  const auto b = Generator(model, go).generate("Once").ids;
  EXPECT_EQ(a, b);  // same seed, same draw
  EXPECT_NE(a, greedy_ids);
  go.do_sample = false;
  EXPECT_EQ(Generator(model, go).generate("Once").ids, greedy_ids);
}

TEST(PublicApi, SpeculativeDecodingGivesPlainTokens) {
  NBITS_REQUIRE_SHARED(stories("onnx_int4/model.onnx"));
  auto model = load("onnx_int4", 2);
  for (bool sample : {false, true}) {
    GenerationOptions go = greedy(40);
    if (sample) {
      go.temperature = 0.8f;
      go.do_sample = true;
      go.seed = 11;
    }
    Generator plain(model, go);
    const auto want = plain.generate("Once upon a time");
    const auto more = plain.generate(" The end.");
    for (const char* kind : {"lookup", "draft"}) {
      GenerationOptions so = go;
      so.speculative = kind;
      so.draft_model = model;  // the model drafting for itself
      so.draft_max = 5;
      Generator spec(model, so);
      const auto got = spec.generate("Once upon a time");
      EXPECT_EQ(got.ids, want.ids) << kind << (sample ? " sampled" : " greedy");
      EXPECT_EQ(got.text, want.text);
      EXPECT_EQ(spec.generate(" The end.").ids, more.ids) << kind << " second turn";
      EXPECT_EQ(spec.sequence(), plain.sequence()) << kind;
    }
  }
  GenerationOptions bad = greedy(4);
  bad.speculative = "sometimes";
  EXPECT_THROW(Generator(model, bad), Error);
  bad.speculative = "draft";  // no draft_model
  EXPECT_THROW(Generator(model, bad), Error);
  bad.speculative = "lookup";
  bad.draft_max = 0;
  EXPECT_THROW(Generator(model, bad), Error);
  // A draft model of another tokenizer.
  NBITS_REQUIRE_SHARED(stories("onnx_fp32/model.onnx"));
  GenerationOptions ok = greedy(4);
  ok.speculative = "draft";
  ok.draft_model = load("onnx_fp32");
  EXPECT_NO_THROW(Generator(model, ok));  // the same tokenizer in another precision
}

// The token-level loop (what a server runs): generate_next_token() and the batched step with
// speculation give plain decoding's tokens, sequence and length at every step, also when a
// turn ends in the middle of what a verify step drew (greedy, and seeded sampling with
// penalties: the random stream goes back to where it stood after the last token taken).
TEST(PublicApi, TokenLevelSpeculationGivesPlainTokens) {
  NBITS_REQUIRE_SHARED(stories("onnx_int4/model.onnx"));
  auto model = load("onnx_int4", 2);
  const std::vector<int32_t> prompt = model->encode("Once upon a time");
  const std::vector<int32_t> more = model->encode(" The end. Once upon a time", false);
  // Turns of 23, 17, 11 and 9 tokens: each begins wherever the one before stopped.
  auto turns = [&](std::span<Generator* const> gens) {
    std::vector<std::vector<int32_t>> out(gens.size());
    for (const auto& [ids, n] :
         {std::pair{prompt, 23}, std::pair{more, 17}, std::pair{more, 11}, std::pair{more, 9}}) {
      for (Generator* g : gens) g->append_tokens(ids);
      for (int i = 0; i < n; ++i) {
        if (gens.size() == 1) {
          gens[0]->generate_next_token();
        } else {
          generate_next_tokens(gens);
        }
        for (size_t b = 0; b < gens.size(); ++b) {
          const Generator& g = *gens[b];
          out[b].push_back(g.next_token());
          const std::vector<int32_t> seq = g.sequence();
          EXPECT_EQ(static_cast<int64_t>(seq.size()), g.length());
          EXPECT_EQ(seq.back(), g.next_token());
        }
      }
    }
    for (size_t b = 0; b < gens.size(); ++b) {  // then -1 and the whole sequence
      const std::vector<int32_t> seq = gens[b]->sequence();
      out[b].push_back(-1);
      out[b].insert(out[b].end(), seq.begin(), seq.end());
    }
    return out;
  };
  for (bool sample : {false, true}) {
    GenerationOptions go = greedy(0);
    if (sample) {
      go.temperature = 0.4f;  // near-greedy: most drafts pass, but every token is a draw
      go.do_sample = true;
      go.top_k = 0;  // the config's top_k is 1
      go.seed = 5;
      go.frequency_penalty = 0.5f;
      go.presence_penalty = 0.3f;
    }
    Generator plain(model, go);
    Generator* p = &plain;
    const auto want = turns(std::span<Generator* const>(&p, 1))[0];
    for (const char* kind : {"lookup", "draft"}) {
      GenerationOptions so = go;
      so.speculative = kind;
      so.draft_model = model;
      so.draft_max = 6;
      so.draft_min = 6;  // fixed: the turns end inside what a verify step drew
      Generator spec(model, so);
      Generator* s = &spec;
      EXPECT_EQ(turns(std::span<Generator* const>(&s, 1))[0], want)
          << kind << (sample ? " sampled" : " greedy");
      EXPECT_GT(spec.speculation_stats().verify_steps, 0) << kind;
      if (!sample && std::string(kind) == "draft") {  // the model drafting for itself: all accepted
        EXPECT_EQ(spec.speculation_stats().accepted, spec.speculation_stats().drafted);
      }
      // In a batch with a plain session: the rows run together (speculation stands down).
      Generator a(model, so), b(model, go);
      Generator* both[] = {&a, &b};
      const auto got = turns(both);
      EXPECT_EQ(got[0], want) << kind << " batched";
      EXPECT_EQ(got[1], want) << kind << " batched, plain row";
    }
  }
}

TEST(PublicApi, BadInputIsAnError) {
  EXPECT_THROW(Model::load(stories("no_such_variant")), Error);
  NBITS_REQUIRE_SHARED(stories("onnx_int4/model.onnx"));
  auto model = load("onnx_int4");
  GenerationOptions bad;
  bad.top_p = 0.0f;
  EXPECT_THROW(Generator(model, bad), Error);
  bad = {};
  bad.max_new_tokens = -1;
  EXPECT_THROW(Generator(model, bad), Error);
  EXPECT_THROW(Generator(nullptr), Error);
  Generator g(model);
  EXPECT_THROW(g.generate_next_token(), Error);  // nothing appended yet
  EXPECT_THROW(g.append_tokens({}), Error);
  const std::vector<int32_t> out_of_range{1, 1 << 20};
  EXPECT_THROW(g.append_tokens(out_of_range), Error);
  EXPECT_THROW(g.rewind_to(5), Error);
  try {
    g.generate_next_token();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("append_tokens"), std::string::npos) << e.what();
  }
}

// onnxruntime-genai's loop gives what generate() gives; logits, sequence, max_length and rewind_to behave.
TEST(PublicApi, TokenLevelLoopMatchesGenerate) {
  NBITS_REQUIRE_SHARED(stories("onnx_int4/model.onnx"));
  auto model = load("onnx_int4");
  const std::vector<int32_t> prompt = model->encode("Once upon a time", true);
  Generator whole(model, greedy(24));
  const std::vector<int32_t> want = whole.generate_ids(prompt).ids;
  ASSERT_EQ(want.size(), 24u);

  GenerationOptions go = greedy(0);
  go.max_length = static_cast<int64_t>(prompt.size()) + 24;
  Generator g(model, go);
  g.append_tokens(prompt);
  EXPECT_EQ(static_cast<int64_t>(g.logits().size()), model->vocab_size());
  std::vector<int32_t> got;
  TokenStream stream(model);
  std::string text;
  while (!g.is_done()) {
    g.generate_next_token();
    got.push_back(g.next_token());
    text += stream.push(g.next_token());
  }
  text += stream.flush();
  EXPECT_EQ(got, want);
  EXPECT_EQ(text, model->decode(want));
  EXPECT_EQ(g.length(), *go.max_length);
  EXPECT_THROW(g.generate_next_token(), Error);  // done: max_length
  std::vector<int32_t> seq = prompt;
  seq.insert(seq.end(), want.begin(), want.end());
  EXPECT_EQ(g.sequence(), seq);

  // Rewind to the prompt plus 8 generated tokens: the next 16 are the same again.
  const int64_t keep = static_cast<int64_t>(prompt.size()) + 8;
  g.rewind_to(keep - 1);
  EXPECT_FALSE(g.is_done());
  g.append_tokens(std::vector<int32_t>{want[7]});
  got.assign(want.begin(), want.begin() + 8);
  while (!g.is_done()) {
    g.generate_next_token();
    got.push_back(g.next_token());
  }
  EXPECT_EQ(got, want);
}

// Each Generator owns its KV cache: conversations interleaved step by step on one
// Model, and run from two threads at once on a shared pool, give the tokens each
// gives alone.
TEST(PublicApi, GeneratorsOnOneModelAreIndependent) {
  for (const char* variant : {"onnx_int4", "onnx_fp32"}) {
    SCOPED_TRACE(variant);
    NBITS_REQUIRE_SHARED(stories(std::string(variant) + "/model.onnx"));
    auto model = load(variant, 2);
    const std::vector<std::string> prompts = {"Once upon a time", "The little dog", "Lily and Ben went"};
    std::vector<std::vector<int32_t>> alone;
    for (const std::string& p : prompts) {
      Generator g(model, greedy(40));
      alone.push_back(g.generate(p).ids);
      ASSERT_EQ(alone.back().size(), 40u);
    }
    ASSERT_NE(alone[0], alone[1]);

    {  // interleaved on one thread, token by token
      std::vector<std::unique_ptr<Generator>> gens;
      std::vector<std::vector<int32_t>> got(prompts.size());
      for (const std::string& p : prompts) {
        gens.push_back(std::make_unique<Generator>(model, greedy(0)));
        gens.back()->append_tokens(model->encode(p, true));
      }
      for (int step = 0; step < 40; ++step)
        for (size_t i = 0; i < gens.size(); ++i) {
          gens[i]->generate_next_token();
          got[i].push_back(gens[i]->next_token());
        }
      for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(got[i], alone[i]) << prompts[i];
    }

    for (int round = 0; round < 3; ++round) {  // concurrently, one thread per conversation
      std::vector<std::vector<int32_t>> got(prompts.size());
      std::vector<std::string> errors(prompts.size());
      std::vector<std::thread> threads;
      for (size_t i = 0; i < prompts.size(); ++i)
        threads.emplace_back([&, i] {
          try {
            Generator g(model, greedy(40));
            got[i] = g.generate(prompts[i]).ids;
          } catch (const std::exception& e) {
            errors[i] = e.what();
          }
        });
      for (auto& t : threads) t.join();
      for (size_t i = 0; i < prompts.size(); ++i) {
        EXPECT_EQ(errors[i], "");
        EXPECT_EQ(got[i], alone[i]) << prompts[i] << " round " << round;
      }
    }
  }
}

// A GGUF phi3's LongRoPE factors follow ModelOptions::context as llama.cpp's follow its context
// size: within the original context (64 of the tiny model's 256) the short set, beyond it the long
// one; each checked against the float64 forward of that choice (tools/gguf/exact_ref.py), level 0.
TEST(PublicApi, GgufPhi3ContextChoosesTheLongRopeFactors) {
  const std::string path = gguf::test::tiny_model("phi3");
  NBITS_REQUIRE_SHARED(path);
  for (const auto& [context, ref] : {std::pair<int64_t, const char*>{64, "phi3_short"}, {128, "phi3"}}) {
    SCOPED_TRACE(ref);
    const std::string ref_path = gguf::test::tiny_ref(ref, "exact");
    NBITS_REQUIRE_SHARED(ref_path);
    std::ifstream in(ref_path);
    const nlohmann::json cases = nlohmann::json::parse(in)["cases"];
    ModelOptions mo;
    mo.threads = 1;
    mo.accuracy_level = 0;
    mo.context = context;
    auto model = Model::load(path, mo);
    EXPECT_EQ(model->max_context_length(), context);  // the rope tables were made for it
    Generator g(model);
    EXPECT_EQ(g.capacity(), context);
    double worst = 0;
    for (const auto& c : cases) {
      g.reset();
      const auto ids = c["prompt_ids"].get<std::vector<int32_t>>();
      g.append_tokens(ids);
      const auto want = c["logits"].get<std::vector<double>>();
      const std::span<const float> got = g.logits();
      ASSERT_EQ(got.size(), want.size());
      double d = 0, scale = 0;
      for (size_t t = 0; t < want.size(); ++t) {
        d = std::max(d, std::fabs(got[t] - want[t]));
        scale = std::max(scale, std::fabs(want[t]));
      }
      worst = std::max(worst, d / scale);
    }
    // Measured ~1e-6; the other factor set is off by > 1e-2 (GgufExact.Phi3ShortRopeFactors...).
    EXPECT_LT(worst, 5e-5);
  }
}

}  // namespace
}  // namespace nbits
