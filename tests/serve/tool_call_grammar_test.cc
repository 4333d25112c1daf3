// The grammar of a required call against its format's parser: replies drawn through each
// format's grammar (serve/tool_calls.h) from random logits on Qwen2.5's vocabulary parse back
// into calls of the request's functions with arguments of their schemas, whatever the "model"
// prefers.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "guidance/guidance.h"
#include "llm/sampler.h"
#include "serve/tool_calls.h"
#include "support/shared_data.h"
#include "tokenizer/chat_reply.h"
#include "tokenizer/tokenizer.h"

namespace nbits::serve {
namespace {

using ojson = nlohmann::ordered_json;

constexpr int64_t kVocab = 151936;  // Qwen2.5's logits
const std::vector<int32_t> kEos = {151645, 151643};

struct Reply {
  std::string text;
  bool ended = false;
};

// boost: ids whose logits are raised (a "model" that likes the format's markers).
Reply draw(const Tokenizer& tok, const std::shared_ptr<const guidance::Vocabulary>& vocab,
           const std::string& grammar, uint64_t seed, const std::vector<int32_t>& boost = {}) {
  llm::SamplerOptions o;
  o.temperature = 1.0f;
  o.seed = seed;
  llm::Sampler s(o);
  s.set_constraint(guidance::make_constraint(vocab, guidance::make_spec("lark", grammar)));
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::normal_distribution<float> noise(0.0f, 2.0f);
  std::vector<float> logits(kVocab);
  std::vector<int32_t> ids;
  Reply r;
  for (int i = 0; i < 600; ++i) {
    for (float& l : logits) l = noise(rng);
    for (int32_t b : boost) logits[static_cast<size_t>(b)] += 12.0f;
    const int32_t id = s.sample(logits, {});
    if (id == kEos[0] || id == kEos[1]) {
      r.ended = true;
      break;
    }
    ids.push_back(id);
  }
  r.text = tok.decode(ids, false);
  return r;
}

TEST(ToolCallGrammar, EveryFormatsRequiredCallParses) {
  NBITS_REQUIRE_SHARED(testing::shared_path("tokenizers/qwen2.5/tokenizer.json"));
  if (!guidance::available()) {
    if (testing::in_ci()) FAIL() << "no guidance engine in this build: " << guidance::engine();
    GTEST_SKIP() << "no guidance engine: " << guidance::engine();
  }
  const Tokenizer tok = Tokenizer::load(testing::shared_path("tokenizers/qwen2.5"));
  const auto vocab = guidance::make_vocabulary(tok, kVocab, kEos);
  ToolRequest t;
  t.tools = ojson::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
      "city": {"type": "string", "maxLength": 12}, "unit": {"enum": ["celsius", "fahrenheit"]}},
      "required": ["city", "unit"], "additionalProperties": false}}},
    {"type": "function", "function": {"name": "add", "parameters": {"type": "object", "properties": {
      "a": {"type": "integer", "minimum": 0, "maximum": 99}, "b": {"type": "integer", "minimum": 0, "maximum": 99}},
      "required": ["a", "b"], "additionalProperties": false}}}])");
  t.choice = ToolRequest::Choice::kRequired;
  const std::vector<std::string> names = tool_names(t);
  for (const ToolFormat f : {ToolFormat::kHermes, ToolFormat::kLlama3, ToolFormat::kMistral,
                             ToolFormat::kToolCallTag, ToolFormat::kXmlFunction, ToolFormat::kSeedXmlFunction,
                             ToolFormat::kDeepSeekR1, ToolFormat::kDeepSeekV31, ToolFormat::kGeneric}) {
    for (const bool parallel : {false, true}) {
      t.parallel = parallel;
      const std::string grammar = tool_call_grammar(t, f);
      ASSERT_EQ(guidance::check(*vocab, guidance::make_spec("lark", grammar)), "") << grammar;
      for (uint64_t seed = 1; seed <= 3; ++seed) {
        const Reply r = draw(tok, vocab, grammar, seed);
        SCOPED_TRACE(std::string(tool_format_name(f)) + (parallel ? " parallel" : "") + ": " + r.text);
        EXPECT_TRUE(r.ended);
        const ParsedReply p = parse_tool_calls(r.text, f, names, t.tools);
        ASSERT_GE(p.calls.size(), 1u);
        if (!parallel) {
          EXPECT_EQ(p.calls.size(), 1u);
        }
        EXPECT_EQ(p.content.find_first_not_of(" \n"), std::string::npos);
        for (const ToolCall& c : p.calls) {
          const ojson args = ojson::parse(c.arguments);
          if (c.name == "add") {
            EXPECT_TRUE(args["a"].is_number_integer() && args["b"].is_number_integer()) << args;
          } else {
            ASSERT_EQ(c.name, "get_weather");
            EXPECT_TRUE(args["unit"] == "celsius" || args["unit"] == "fahrenheit") << args;
            ASSERT_TRUE(args["city"].is_string()) << args;
          }
        }
      }
    }
  }
}

// gpt-oss's grammar with its markers as special tokens (`<[ID]>`), which the harmony vocabulary
// has and no tokenizer here does: Qwen2.5's special tokens stand in for them, <|call|> as its eos
// <|im_end|> (in gpt-oss <|call|> ends generation too: the grammar must take the end token it
// expects as its lexeme). Analysis messages are drawn too (the markers' logits are raised).
TEST(ToolCallGrammar, HarmonyWithSpecialTokenMarkers) {
  NBITS_REQUIRE_SHARED(testing::shared_path("tokenizers/qwen2.5/tokenizer.json"));
  if (!guidance::available()) {
    if (testing::in_ci()) FAIL() << "no guidance engine in this build: " << guidance::engine();
    GTEST_SKIP() << "no guidance engine: " << guidance::engine();
  }
  const Tokenizer tok = Tokenizer::load(testing::shared_path("tokenizers/qwen2.5"));
  const auto vocab = guidance::make_vocabulary(tok, kVocab, kEos);
  const std::map<std::string, std::string> stand_in = {
      {"<|channel|>", "<|box_start|>"}, {"<|message|>", "<|box_end|>"},        {"<|end|>", "<|quad_start|>"},
      {"<|start|>", "<|quad_end|>"},    {"<|constrain|>", "<|vision_start|>"}, {"<|call|>", "<|im_end|>"}};
  std::vector<int32_t> boost;
  for (const auto& [marker, qwen] : stand_in) {
    const int32_t id = tok.token_to_id(qwen);
    ASSERT_GE(id, 0) << qwen;
    ASSERT_TRUE(tok.is_special(id)) << qwen;
    if (marker != "<|call|>") boost.push_back(id);
  }
  auto special = [&](std::string_view m) {
    return "<[" + std::to_string(tok.token_to_id(stand_in.at(std::string(m)))) + "]>";
  };
  ToolRequest t;
  t.tools = ojson::parse(R"([{"type": "function", "function": {"name": "add", "parameters": {"type": "object",
    "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 99}}, "required": ["a"],
    "additionalProperties": false}}}, {"type": "function", "function": {"name": "noop", "parameters": {
    "type": "object", "properties": {}, "additionalProperties": false}}}])");
  t.choice = ToolRequest::Choice::kRequired;
  const std::string grammar = tool_call_grammar(t, ToolFormat::kHarmony, special);
  ASSERT_EQ(guidance::check(*vocab, guidance::make_spec("lark", grammar)), "") << grammar;
  int analysed = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const Reply r = draw(tok, vocab, grammar, seed, boost);
    SCOPED_TRACE(r.text);
    EXPECT_TRUE(r.ended);       // at <|call|>'s stand-in, an eos token
    std::string text = r.text;  // the stand-ins back to harmony's markers
    for (const auto& [marker, qwen] : stand_in)
      for (size_t at; (at = text.find(qwen)) != std::string::npos;) text.replace(at, qwen.size(), marker);
    ReplyChannels ch(ReasoningFormat::kHarmony, false);
    ReplyChannels::Piece p = ch.push(text), end = ch.finish();
    p.calls.insert(p.calls.end(), end.calls.begin(), end.calls.end());
    p.reasoning += end.reasoning;
    ASSERT_EQ(p.calls.size(), 1u) << text;
    EXPECT_EQ(p.content + end.content, "");
    analysed += !p.reasoning.empty();
    const ojson args = ojson::parse(p.calls[0].arguments);
    if (p.calls[0].name == "add") {
      EXPECT_TRUE(args["a"].is_number_integer()) << args;
    } else {
      EXPECT_EQ(p.calls[0].name, "noop");
    }
  }
  EXPECT_GT(analysed, 0);  // some replies thought first
}

}  // namespace
}  // namespace nbits::serve
