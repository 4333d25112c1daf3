// Constrained decoding through the public API on the real SmolLM2-135M-Instruct Q4_1 GGUF: every
// reply of a conversation matches the schema on its own, the token-level loop and batched steps
// follow it too, and bad specs are refused before anything runs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gguf/gguf_test_data.h"
#include "nbits/nbits.h"
#include "support/shared_data.h"
#include "support/text_shape.h"

namespace nbits {
namespace {

using nlohmann::json;

#define REQUIRE_SMOLLM2_AND_ENGINE()                                                             \
  do {                                                                                           \
    NBITS_REQUIRE_SHARED(gguf::test::smollm2_gguf());                                            \
    if (!guidance_available()) {                                                                 \
      if (testing::in_ci()) FAIL() << "no guidance engine in this build: " << guidance_engine(); \
      GTEST_SKIP() << "no guidance engine: " << guidance_engine();                               \
    }                                                                                            \
  } while (0)

std::shared_ptr<Model> smollm2() {
  static std::shared_ptr<Model> m = [] {
    ModelOptions mo;
    mo.threads = 2;
    return Model::load(gguf::test::smollm2_gguf(), mo);
  }();
  return m;
}

std::string chat_prompt(const Model& m, const std::string& user) {
  return m.apply_chat_template({{"user", user}}, /*add_generation_prompt=*/true);
}

const char* kPerson = R"({"type": "object", "properties": {
  "name": {"type": "string", "maxLength": 24},
  "age": {"type": "integer", "minimum": 0, "maximum": 120},
  "city": {"enum": ["Paris", "Tokyo", "Lima"]}},
  "required": ["name", "age", "city"], "additionalProperties": false})";

void expect_person(const std::string& text) {
  SCOPED_TRACE(text);
  const json j = json::parse(text);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j.size(), 3u);
  EXPECT_TRUE(j["name"].is_string());
  ASSERT_TRUE(j["age"].is_number_integer());
  EXPECT_GE(j["age"].get<int>(), 0);
  EXPECT_LE(j["age"].get<int>(), 120);
  const std::string city = j["city"];
  EXPECT_TRUE(city == "Paris" || city == "Tokyo" || city == "Lima") << city;
}

TEST(PublicApiGuidance, EveryReplyOfAConversationMatchesTheSchema) {
  REQUIRE_SMOLLM2_AND_ENGINE();
  auto model = smollm2();
  EXPECT_EQ(model->check_guidance("json_schema", kPerson), "");
  for (bool sample : {false, true}) {
    GenerationOptions go;
    go.max_new_tokens = 96;
    go.temperature = sample ? 0.9f : 0.0f;
    go.seed = 5;
    go.guidance_type = "json_schema";
    go.guidance_data = kPerson;
    Generator gen(model, go);
    const auto r1 = gen.generate(chat_prompt(*model, "Describe a person who lives in a city, as JSON."));
    EXPECT_TRUE(r1.stopped_at_eos) << r1.text;
    expect_person(r1.text);
    // The next turn (ChatML; the reply's <|im_end|> is the pending token): constrained afresh.
    const auto r2 =
        gen.generate("\n<|im_start|>user\nAnother one, please.<|im_end|>\n<|im_start|>assistant\n");
    EXPECT_TRUE(r2.stopped_at_eos) << r2.text;
    expect_person(r2.text);
  }
}

TEST(PublicApiGuidance, TokenLevelAndBatchedStepsFollowTheConstraint) {
  REQUIRE_SMOLLM2_AND_ENGINE();
  auto model = smollm2();
  GenerationOptions go;
  go.temperature = 0.0f;
  go.guidance_type = "regex";
  go.guidance_data = "(yes|no), [0-9]{2} apples";
  Generator a(model, go), b(model, go);
  const std::vector<int32_t> pa = model->encode(chat_prompt(*model, "Do you like apples? How many?"), false);
  const std::vector<int32_t> pb =
      model->encode(chat_prompt(*model, "Is the sky green? Count apples."), false);
  a.append_tokens(pa);
  b.append_tokens(pb);
  std::vector<int32_t> ta, tb;
  for (int i = 0; i < 40 && !(a.is_done() && b.is_done()); ++i) {
    std::vector<Generator*> both;
    std::vector<std::vector<int32_t>*> out;
    if (!a.is_done()) both.push_back(&a), out.push_back(&ta);
    if (!b.is_done()) both.push_back(&b), out.push_back(&tb);
    generate_next_tokens(both);  // one batched step, each row through its own constraint
    for (size_t k = 0; k < both.size(); ++k) out[k]->push_back(both[k]->next_token());
  }
  for (auto* t : {&ta, &tb}) {
    ASSERT_FALSE(t->empty());
    EXPECT_TRUE(model->is_eos(t->back()));
    t->pop_back();
    const std::string text = model->decode(*t, /*skip_special=*/false);
    EXPECT_TRUE(testing::has_any_shape(text, {"yes, 99 apples", "no, 99 apples"})) << text;
  }
}

// The tokens a schema forces (its keys, quotes and colons) run in verify steps, and speculation
// combines with guidance; the replies are the same token for token, also in a token loop whose
// turns end inside a verify step (the constraint takes back what was drawn ahead).
TEST(PublicApiGuidance, ForcedTokensAndSpeculationKeepTheTokens) {
  REQUIRE_SMOLLM2_AND_ENGINE();
  auto model = smollm2();
  const std::string prompt = chat_prompt(*model, "Describe a person who lives in a city, as JSON.");
  for (bool sample : {false, true}) {
    GenerationOptions go;
    go.max_new_tokens = 96;
    go.temperature = sample ? 0.9f : 0.0f;
    go.top_k = 0;
    go.seed = 5;
    go.guidance_type = "json_schema";
    go.guidance_data = kPerson;
    Generator ref(model, go);
    const auto want = ref.generate(prompt);
    expect_person(want.text);
    // Few here: llguidance's JSON allows any whitespace between tokens by default, so mostly
    // the tokens inside a key are forced.
    EXPECT_GT(ref.speculation_stats().forced_kept, 0) << "nothing was fast-forwarded";
    std::vector<GenerationOptions> variants;
    for (const char* kind : {"lookup", "draft"}) {
      GenerationOptions so = go;
      so.speculative = kind;
      so.draft_model = model;  // drafting for itself, unconstrained: drafts the schema may refuse
      so.draft_max = 6;
      so.draft_min = 6;
      variants.push_back(so);
      Generator g(model, so);
      EXPECT_EQ(g.generate(prompt).ids, want.ids) << kind << (sample ? " sampled" : " greedy");
    }
    {  // fast_forward off: the same tokens, each from a step of its own, so each has its logits
      GenerationOptions slow = go;
      slow.fast_forward = false;
      Generator g(model, slow);
      g.append_tokens(model->encode(prompt, false));
      std::vector<int32_t> ids;
      while (!g.is_done() && static_cast<int64_t>(ids.size()) < go.max_new_tokens) {
        g.generate_next_token();
        ids.push_back(g.next_token());
        ASSERT_EQ(static_cast<int64_t>(g.logits().size()), model->vocab_size()) << "token " << ids.size();
      }
      EXPECT_EQ(ids, want.ids) << (sample ? "sampled" : "greedy") << ", fast_forward off";
      EXPECT_EQ(g.speculation_stats().forced, 0);
    }
    // Token level: turns of 9 and 13 tokens, the second after appended tokens.
    auto turns = [&](const GenerationOptions& o) {
      Generator g(model, o);
      g.append_tokens(model->encode(prompt, false));
      std::vector<int32_t> out;
      for (int n : {9, 13}) {
        for (int i = 0; i < n && !g.is_done(); ++i) {
          g.generate_next_token();
          out.push_back(g.next_token());
        }
        g.append_tokens(model->encode(" ", false));
      }
      out.push_back(-1);
      const std::vector<int32_t> seq = g.sequence();
      out.insert(out.end(), seq.begin(), seq.end());
      return out;
    };
    const std::vector<int32_t> want_turns = turns(go);
    for (const GenerationOptions& so : variants)
      EXPECT_EQ(turns(so), want_turns) << so.speculative << (sample ? " sampled" : " greedy") << " turns";
  }
}

TEST(PublicApiGuidance, BadSpecsAreRefusedBeforeAnythingRuns) {
  REQUIRE_SMOLLM2_AND_ENGINE();
  auto model = smollm2();
  EXPECT_NE(model->check_guidance("json_schema", R"({"type": 7})"), "");
  EXPECT_NE(model->check_guidance("regex", "[a-"), "");
  EXPECT_NE(model->check_guidance("toml", "x"), "");
  GenerationOptions go;
  go.guidance_type = "json_schema";
  go.guidance_data = R"({"type": "objec"})";
  EXPECT_THROW(Generator(model, go), Error);
}

}  // namespace
}  // namespace nbits
