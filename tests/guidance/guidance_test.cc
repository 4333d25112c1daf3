// The guidance room on a real vocabulary (Qwen2.5's, ../shared) with a stand-in model: random
// logits each step, drawn through llm::Sampler and the constraint. Whatever the "model" prefers,
// the text must match the spec and end with an eos token once it is complete.
#include "guidance/guidance.h"

#include <gtest/gtest.h>

#include <bit>
#include <nlohmann/json.hpp>
#include <random>

#include "base/error.h"
#include "llm/sampler.h"
#include "support/shared_data.h"
#include "support/text_shape.h"

namespace nbits {
namespace {

using nlohmann::json;

// Fails in CI (the engine must be built there), skips elsewhere when it is not.
#define REQUIRE_ENGINE()                                                                          \
  do {                                                                                            \
    if (!guidance::available()) {                                                                 \
      if (testing::in_ci()) FAIL() << "no guidance engine in this build: " << guidance::engine(); \
      GTEST_SKIP() << "no guidance engine: " << guidance::engine();                               \
    }                                                                                             \
  } while (0)

constexpr int64_t kVocab = 151936;  // Qwen2.5's logits (the tokenizer has 151665 tokens)
const std::vector<int32_t> kEos = {151645, 151643};

struct Qwen {
  Tokenizer tok;
  std::shared_ptr<const guidance::Vocabulary> vocab;
};

const Qwen& qwen() {
  static const Qwen q = [] {
    Tokenizer t = Tokenizer::load(testing::shared_path("tokenizers/qwen2.5"));
    return Qwen{std::move(t), nullptr};
  }();
  static std::shared_ptr<const guidance::Vocabulary> v = guidance::make_vocabulary(q.tok, kVocab, kEos);
  const_cast<Qwen&>(q).vocab = v;
  return q;
}

struct Reply {
  std::string text;
  bool ended = false;  // an eos token was drawn
  size_t tokens = 0;
};

// Draws up to max_tokens from random logits (a fixed seed) through the constraint.
Reply generate(const guidance::Spec& spec, uint64_t seed, size_t max_tokens = 400, bool greedy = false) {
  const Qwen& q = qwen();
  llm::SamplerOptions o;
  o.greedy = greedy;
  o.temperature = 1.0f;
  o.seed = seed;
  llm::Sampler s(o);
  s.set_constraint(guidance::make_constraint(q.vocab, spec));
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::normal_distribution<float> noise(0.0f, 2.0f);
  std::vector<float> logits(kVocab);
  std::vector<int32_t> ids;
  Reply r;
  for (; r.tokens < max_tokens; ++r.tokens) {
    for (float& l : logits) l = noise(rng);
    const int32_t id = s.sample(logits, {});
    if (id == kEos[0] || id == kEos[1]) {
      r.ended = true;
      break;
    }
    ids.push_back(id);
  }
  r.text = q.tok.decode(ids, false);
  return r;
}

TEST(Guidance, RegexRepliesMatchAndEnd) {
  NBITS_REQUIRE_SHARED(testing::shared_path("tokenizers/qwen2.5/tokenizer.json"));
  REQUIRE_ENGINE();
  // (Rust's \d is any Unicode digit: the ASCII class is spelled out.)
  const std::string re = R"(\([0-9]{3}\) [0-9]{3}-[0-9]{4}( ext\. [0-9]{1,3})?)";
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    const Reply r = generate(guidance::make_spec("regex", re), seed);
    SCOPED_TRACE(r.text);
    EXPECT_TRUE(r.ended);
    EXPECT_TRUE(testing::has_any_shape(r.text, {"(999) 999-9999", "(999) 999-9999 ext. 9",
                                                "(999) 999-9999 ext. 99", "(999) 999-9999 ext. 999"}));
  }
}

TEST(Guidance, LarkGrammarRepliesFollowIt) {
  NBITS_REQUIRE_SHARED(testing::shared_path("tokenizers/qwen2.5/tokenizer.json"));
  REQUIRE_ENGINE();
  const std::string grammar = R"(start: answer " because " reason
answer: "yes" | "no"
reason: /[a-z]{1,12}/)";
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const Reply r = generate(guidance::make_spec("lark", grammar), seed);
    SCOPED_TRACE(r.text);
    EXPECT_TRUE(r.ended);
    const size_t sp = r.text.find(" because ");
    ASSERT_NE(sp, std::string::npos);
    EXPECT_TRUE(r.text.substr(0, sp) == "yes" || r.text.substr(0, sp) == "no");
    const std::string reason = r.text.substr(sp + 9);
    EXPECT_TRUE(!reason.empty() && reason.size() <= 12 &&
                testing::has_shape(reason, std::string(reason.size(), 'a')));
  }
}

// A schema with nesting, $defs / $ref, enums, bounds, anyOf and optional fields. Flexible
// whitespace off: random logits would otherwise pick whitespace runs without end.
const char* kSchema = R"({
  "x-guidance": {"whitespace_flexible": false},
  "$defs": {"pet": {"type": "object", "properties": {
      "kind": {"enum": ["cat", "dog", "fish"]},
      "age": {"type": "integer", "minimum": 0, "maximum": 30}},
    "required": ["kind", "age"], "additionalProperties": false}},
  "type": "object",
  "properties": {
    "name": {"type": "string", "minLength": 1, "maxLength": 8},
    "score": {"type": "number", "minimum": -5, "maximum": 5},
    "ok": {"type": "boolean"},
    "pets": {"type": "array", "items": {"$ref": "#/$defs/pet"}, "maxItems": 3},
    "id": {"anyOf": [{"type": "integer", "minimum": 1, "maximum": 999}, {"type": "null"}]}
  },
  "required": ["name", "ok", "pets", "id"],
  "additionalProperties": false
})";

TEST(Guidance, JsonSchemaRepliesParseAndValidate) {
  NBITS_REQUIRE_SHARED(testing::shared_path("tokenizers/qwen2.5/tokenizer.json"));
  REQUIRE_ENGINE();
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const Reply r = generate(guidance::make_spec("json_schema", kSchema), seed);
    SCOPED_TRACE(r.text);
    ASSERT_TRUE(r.ended);
    const json j = json::parse(r.text);  // throws (fails the test) when it is not JSON
    // Properties come in the schema's order (as OpenAI's strict outputs do).
    const size_t pn = r.text.find("\"name\""), po = r.text.find("\"ok\""), pp = r.text.find("\"pets\"");
    EXPECT_LT(pn, po);
    EXPECT_LT(po, pp);
    ASSERT_TRUE(j.is_object());
    for (const auto& [k, v] : j.items())
      EXPECT_TRUE(k == "name" || k == "score" || k == "ok" || k == "pets" || k == "id") << k;
    ASSERT_TRUE(j.contains("name") && j["name"].is_string());
    const std::string name = j["name"];
    const auto name_chars =
        std::count_if(name.begin(), name.end(),  // UTF-8 lead bytes = characters
                      [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
    EXPECT_GE(name_chars, 1);
    EXPECT_LE(name_chars, 8);
    if (j.contains("score")) {
      EXPECT_TRUE(j["score"].is_number());
      EXPECT_GE(j["score"].get<double>(), -5);
      EXPECT_LE(j["score"].get<double>(), 5);
    }
    EXPECT_TRUE(j["ok"].is_boolean());
    ASSERT_TRUE(j["pets"].is_array());
    EXPECT_LE(j["pets"].size(), 3u);
    for (const json& p : j["pets"]) {
      ASSERT_TRUE(p.is_object());
      EXPECT_EQ(p.size(), 2u);
      const std::string kind = p["kind"];
      EXPECT_TRUE(kind == "cat" || kind == "dog" || kind == "fish") << kind;
      ASSERT_TRUE(p["age"].is_number_integer());
      EXPECT_GE(p["age"].get<int>(), 0);
      EXPECT_LE(p["age"].get<int>(), 30);
    }
    ASSERT_TRUE(j.contains("id"));
    if (!j["id"].is_null()) {
      ASSERT_TRUE(j["id"].is_number_integer());
      EXPECT_GE(j["id"].get<int>(), 1);
      EXPECT_LE(j["id"].get<int>(), 999);
    }
  }
}

TEST(Guidance, FirstMaskOfJsonObjectOpensAnObject) {
  NBITS_REQUIRE_SHARED(testing::shared_path("tokenizers/qwen2.5/tokenizer.json"));
  REQUIRE_ENGINE();
  const Qwen& q = qwen();
  auto c = guidance::make_constraint(q.vocab, guidance::make_spec("json_object", ""));
  const std::vector<std::string> bytes = q.tok.token_bytes();
  const std::span<const uint32_t> mask = c->allowed();
  size_t n = 0;
  for (size_t w = 0; w < mask.size(); ++w)
    for (uint32_t b = mask[w]; b; b &= b - 1) {
      const size_t id = w * 32 + static_cast<size_t>(std::countr_zero(b));
      ASSERT_LT(id, bytes.size());
      const std::string& t = bytes[id];
      const size_t first = t.find_first_not_of(" \t\r\n");
      EXPECT_TRUE(first != std::string::npos && t[first] == '{') << "token " << id << " '" << t << "'";
      ++n;
    }
  EXPECT_GT(n, 1u);  // '{' and its forms with whitespace or more after it
}

TEST(Guidance, CompleteReplyAllowsOnlyEosThenEnds) {
  NBITS_REQUIRE_SHARED(testing::shared_path("tokenizers/qwen2.5/tokenizer.json"));
  REQUIRE_ENGINE();
  const Qwen& q = qwen();
  auto c = guidance::make_constraint(q.vocab, guidance::make_spec("regex", "ok"));
  c->accept(q.tok.encode("ok", false).at(0));
  const std::span<const uint32_t> mask = c->allowed();
  std::vector<int32_t> allowed;
  for (size_t w = 0; w < mask.size(); ++w)
    for (uint32_t b = mask[w]; b; b &= b - 1)
      allowed.push_back(static_cast<int32_t>(w * 32 + std::countr_zero(b)));
  EXPECT_EQ(allowed, (std::vector<int32_t>{151643, 151645}));  // both eos ids, in id order
  c->accept(kEos[0]);
  EXPECT_THROW(c->allowed(), Error);
}

TEST(Guidance, BadSpecsAreRefusedWithTheReason) {
  NBITS_REQUIRE_SHARED(testing::shared_path("tokenizers/qwen2.5/tokenizer.json"));
  EXPECT_THROW(guidance::make_spec("yaml", "x"), Error);
  EXPECT_THROW(guidance::make_spec("regex", ""), Error);
  REQUIRE_ENGINE();
  const Qwen& q = qwen();
  auto expect_refused = [&](const char* type, const std::string& data, const char* words) {
    SCOPED_TRACE(std::string(type) + ": " + data);
    const guidance::Spec s = guidance::make_spec(type, data);
    const std::string why = guidance::check(*q.vocab, s);
    EXPECT_NE(why.find(words), std::string::npos) << why;
    try {
      guidance::make_constraint(q.vocab, s);
      ADD_FAILURE() << "make_constraint accepted it";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("invalid ") + type), std::string::npos) << e.what();
    }
  };
  expect_refused("json_schema", R"({"type": "objec"})", "objec");
  expect_refused("json_schema", R"({"type": "object")", "invalid json_schema");
  expect_refused("json_schema", R"({"$ref": "#/$defs/missing"})", "missing");
  expect_refused("regex", "(ab", "unclosed");
  expect_refused("lark", "start: missing_rule", "missing_rule");
  EXPECT_EQ(guidance::check(*q.vocab, guidance::make_spec("json_schema", kSchema)), "");
}

// The budgets: a schema past the grammar size is refused at compile time, a mask past its
// budget fails with the engine's message (not a hang); the defaults take both.
TEST(Guidance, LimitsBoundTheGrammarAndTheMask) {
  NBITS_REQUIRE_SHARED(testing::shared_path("tokenizers/qwen2.5/tokenizer.json"));
  REQUIRE_ENGINE();
  const Qwen& q = qwen();
  const guidance::Spec schema = guidance::make_spec("json_schema", kSchema);
  const auto small = guidance::make_vocabulary(q.tok, kVocab, kEos, {0, 20});
  const std::string why = guidance::check(*small, schema);
  std::printf("[limits] grammar size 20: %s\n", why.c_str());
  EXPECT_NE(why.find("size"), std::string::npos) << why;
  // A regex whose first mask walks much of the vocabulary: llguidance's default budget takes it.
  const guidance::Spec words = guidance::make_spec("regex", "[a-z ]{1,200}");
  EXPECT_NO_THROW(guidance::make_constraint(q.vocab, words)->allowed());
  const auto tight = guidance::make_vocabulary(q.tok, kVocab, kEos, {0.001, 0});
  try {
    guidance::make_constraint(tight, words)->allowed();
    ADD_FAILURE() << "a mask past its budget was computed";
  } catch (const Error& e) {
    std::printf("[limits] mask budget 0.001 ms: %s\n", e.what());
    EXPECT_NE(std::string(e.what()).find("--guidance-mask-ms"), std::string::npos) << e.what();
  }
  EXPECT_THROW(guidance::make_vocabulary(q.tok, kVocab, kEos, {-1, 0}), Error);
}

}  // namespace
}  // namespace nbits
