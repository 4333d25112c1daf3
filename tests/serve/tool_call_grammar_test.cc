// The grammar of a required call against its format's parser: replies drawn through each
// format's grammar (serve/tool_calls.h) from random logits on Qwen2.5's vocabulary parse back
// into calls of the request's functions with arguments of their schemas, whatever the "model"
// prefers.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "base/error.h"
#include "guidance/guidance.h"
#include "llm/sampler.h"
#include "serve/tool_call_deepseek.h"
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

// boost: ids whose logits are raised by `by` (a "model" that likes the format's markers).
Reply draw(const Tokenizer& tok, const std::shared_ptr<const guidance::Vocabulary>& vocab,
           const std::string& grammar, uint64_t seed, const std::vector<int32_t>& boost = {},
           float by = 12.0f) {
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
    for (int32_t b : boost) logits[static_cast<size_t>(b)] += by;
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

// "" when the grammar takes `text` (in the tokenizer's tokens) and then, with `end`, allows an
// eos; else where it stopped.
std::string follow(const Tokenizer& tok, const std::shared_ptr<const guidance::Vocabulary>& vocab,
                   const std::string& grammar, const std::string& text, bool end = true) {
  const auto c = guidance::make_constraint(vocab, guidance::make_spec("lark", grammar));
  auto allowed = [&](int32_t id) {
    const auto m = c->allowed();
    const auto w = static_cast<size_t>(id / 32);
    return w < m.size() && ((m[w] >> (id % 32)) & 1u) != 0;
  };
  std::string done;
  for (const int32_t id : tok.encode(text, false)) {
    if (!allowed(id)) return "refused '" + tok.decode({id}, false) + "' after '" + done + "'";
    c->accept(id);
    done += tok.decode({id}, false);
  }
  return !end || allowed(kEos[0]) ? "" : "no end after '" + done + "'";
}

// The tools the format tests call.
ojson weather_and_add() {
  return ojson::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
      "city": {"type": "string", "maxLength": 12}, "unit": {"enum": ["celsius", "fahrenheit"]}},
      "required": ["city", "unit"], "additionalProperties": false}}},
    {"type": "function", "function": {"name": "add", "parameters": {"type": "object", "properties": {
      "a": {"type": "integer", "minimum": 0, "maximum": 99}, "b": {"type": "integer", "minimum": 0, "maximum": 99}},
      "required": ["a", "b"], "additionalProperties": false}}}])");
}

// Every format but harmony (whose replies ReplyChannels reads).
const std::vector<ToolFormat> kFormats = {
    ToolFormat::kHermes,      ToolFormat::kLlama3,      ToolFormat::kMistral,
    ToolFormat::kToolCallTag, ToolFormat::kXmlFunction, ToolFormat::kSeedXmlFunction,
    ToolFormat::kDeepSeekR1,  ToolFormat::kDeepSeekV31, ToolFormat::kGeneric};

// A call's calls (checked against weather_and_add's schemas).
void expect_valid(const std::vector<ToolCall>& calls) {
  for (const ToolCall& c : calls) {
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

// Qwen2.5's tokenizer (../shared) and llguidance's index of it, made once: each test fails in CI
// and is skipped elsewhere when either is missing.
class ToolCallGrammar : public ::testing::Test {
 protected:
  void SetUp() override {
    NBITS_REQUIRE_SHARED(testing::shared_path("tokenizers/qwen2.5/tokenizer.json"));
    if (!guidance::available()) {
      if (testing::in_ci()) FAIL() << "no guidance engine in this build: " << guidance::engine();
      GTEST_SKIP() << "no guidance engine: " << guidance::engine();
    }
    static const Tokenizer t = Tokenizer::load(testing::shared_path("tokenizers/qwen2.5"));
    static const std::shared_ptr<const guidance::Vocabulary> v = guidance::make_vocabulary(t, kVocab, kEos);
    tokenizer = &t;
    vocab = v;
  }
  const Tokenizer* tokenizer = nullptr;
  std::shared_ptr<const guidance::Vocabulary> vocab;
};

TEST_F(ToolCallGrammar, EveryFormatsRequiredCallParses) {
  const Tokenizer& tok = *tokenizer;
  ToolRequest t;
  t.tools = weather_and_add();
  t.choice = ToolRequest::Choice::kRequired;
  const std::vector<std::string> names = tool_names(t);
  for (const ToolFormat f : kFormats) {
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
        expect_valid(p.calls);
      }
    }
  }
}

// The start of a call of a function the request lacks, in format f (bad) or of get_weather
// (good); JSON-reply formats' calls are the reply itself, the others' follow text.
std::string call_start(ToolFormat f, const std::string& name) {
  const std::string q = "{\"name\": \"" + name + "\"";
  const std::string ds = std::string(kDeepSeekCallsBegin) + std::string(kDeepSeekCallBegin);
  switch (f) {
    case ToolFormat::kHermes:
      return "Sure.\n<tool_call>\n" + q;
    case ToolFormat::kLlama3:
      return q;
    case ToolFormat::kMistral:
      return "Sure. [TOOL_CALLS][" + q;
    case ToolFormat::kToolCallTag:
      return "Sure. <|tool_call|>[" + q;
    case ToolFormat::kXmlFunction:
      return "Sure.\n<tool_call>\n<function=" + name + ">\n";
    case ToolFormat::kSeedXmlFunction:
      return "Sure.\n<seed:tool_call>\n<function=" + name + ">\n";
    case ToolFormat::kDeepSeekR1:
      return "Sure." + ds + "function" + std::string(kDeepSeekSep) + name;
    case ToolFormat::kDeepSeekV31:
      return "Sure." + ds + name + std::string(kDeepSeekSep);
    case ToolFormat::kHarmony:
    case ToolFormat::kGeneric:
      break;
  }
  return "{\"tool_calls\": [" + q;
}

// tool_choice auto: any text that does not spell the opening marker; once the marker (or, for
// bare-JSON formats, a reply opening with {") is written, only a well-formed call of the
// request's functions.
TEST_F(ToolCallGrammar, AutoTakesTextOrWellFormedCalls) {
  const Tokenizer& tok = *tokenizer;
  ToolRequest t;
  t.tools = weather_and_add();
  const std::string text =
      "The weather in Paris is mild; a < b and x<y.\n```python\nprint({\"a\": [1, 2]})\n```\n<b>Done</b>.";
  for (const ToolFormat f : kFormats) {
    for (const bool parallel : {false, true}) {
      SCOPED_TRACE(std::string(tool_format_name(f)) + (parallel ? " parallel" : ""));
      t.parallel = parallel;
      t.choice = ToolRequest::Choice::kAuto;
      const std::string g = tool_call_grammar(t, f);
      ASSERT_EQ(guidance::check(*vocab, guidance::make_spec("lark", g)), "") << g;
      EXPECT_EQ(follow(tok, vocab, g, ""), "");
      EXPECT_EQ(follow(tok, vocab, g, text), "");
      EXPECT_EQ(follow(tok, vocab, g, call_start(f, "get_weather"), false), "") << g;
      EXPECT_EQ(follow(tok, vocab, g, call_start(f, "no_such_function"), false).rfind("refused", 0), 0u);
      t.choice = ToolRequest::Choice::kRequired;
      const std::string required = tool_call_grammar(t, f);
      for (uint64_t seed = 1; seed <= 2; ++seed) {
        const Reply r = draw(tok, vocab, required, seed);
        ASSERT_TRUE(r.ended);
        EXPECT_EQ(follow(tok, vocab, g, r.text), "") << r.text;
        EXPECT_EQ(follow(tok, vocab, g, "Let me check.\n" + r.text), "") << r.text;
        // A call cut short cannot end the reply.
        EXPECT_NE(follow(tok, vocab, g, r.text.substr(0, r.text.size() - 2)), "") << r.text;
      }
    }
  }
}

// Replies drawn through auto from a "model" that often writes <tool_call> (one token of Qwen2.5's,
// spelled as text or named as a special token): some text, then calls that parse and follow the
// schemas; replies that call nothing are text.
TEST_F(ToolCallGrammar, AutoDrawsParse) {
  const Tokenizer& tok = *tokenizer;
  const int32_t open = tok.token_to_id("<tool_call>");
  ASSERT_GE(open, 0);
  ToolRequest t;
  t.tools = weather_and_add();
  t.choice = ToolRequest::Choice::kAuto;
  const LarkMarker as_token = [&](std::string_view m) {
    const int32_t id = tok.token_to_id(m);
    return id >= 0 ? "<[" + std::to_string(id) + "]>" : ojson(std::string(m)).dump();
  };
  for (const ToolFormat f : {ToolFormat::kHermes, ToolFormat::kXmlFunction}) {
    for (const bool special : {false, true}) {
      const std::string g = tool_call_grammar(t, f, special ? as_token : LarkMarker{});
      int called = 0, text_first = 0;
      for (uint64_t seed = 1; seed <= 6; ++seed) {
        const Reply r = draw(tok, vocab, g, seed, {open}, 8.5f);
        SCOPED_TRACE(std::string(tool_format_name(f)) + (special ? " special: " : ": ") + r.text);
        const ParsedReply p = parse_tool_calls(r.text, f, tool_names(t), t.tools);
        if (r.text.find("<tool_call>") == std::string::npos) {
          EXPECT_TRUE(p.calls.empty());
          continue;
        }
        EXPECT_TRUE(r.ended);
        ASSERT_GE(p.calls.size(), 1u);
        expect_valid(p.calls);
        ++called;
        text_first += !p.content.empty();
      }
      EXPECT_GT(called, 0);
      EXPECT_GT(text_first, 0);
    }
  }
}

// The XML forms write string values bare: their pattern and format hold the drawn text itself
// (checked here against their shapes).
TEST_F(ToolCallGrammar, XmlStringValuesFollowPatternAndFormat) {
  const Tokenizer& tok = *tokenizer;
  ToolRequest t;
  t.tools =
      ojson::parse(R"([{"type": "function", "function": {"name": "book", "parameters": {"type": "object",
    "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}-\\d{2}$"},
      "day": {"type": "string", "format": "date"}, "host": {"type": "string", "format": "ipv4"},
      "note": {"type": "string", "pattern": "ok", "maxLength": 8}},
    "required": ["code", "day", "host", "note"]}}}])");
  t.choice = ToolRequest::Choice::kRequired;
  t.parallel = false;
  // The shapes, checked by hand (std::regex trips GCC 12's -Wmaybe-uninitialized under ASan).
  auto shaped = [](const std::string& v, const std::string& shape) {  // 'A' upper, '9' digit, else itself
    if (v.size() != shape.size()) return false;
    for (size_t i = 0; i < v.size(); ++i) {
      const char c = v[i], want = shape[i];
      if (want == 'A' ? !(c >= 'A' && c <= 'Z') : want == '9' ? !(c >= '0' && c <= '9') : c != want)
        return false;
    }
    return true;
  };
  auto ipv4 = [](const std::string& v) {
    int parts = 0, digits = 0;
    for (const char c : v + ".") {
      if (c == '.') {
        if (digits < 1 || digits > 3) return false;
        ++parts;
        digits = 0;
      } else if (c >= '0' && c <= '9') {
        ++digits;
      } else {
        return false;
      }
    }
    return parts == 4;
  };
  for (const ToolFormat f : {ToolFormat::kXmlFunction, ToolFormat::kSeedXmlFunction}) {
    const std::string g = tool_call_grammar(t, f);
    ASSERT_EQ(guidance::check(*vocab, guidance::make_spec("lark", g)), "") << g;
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      const Reply r = draw(tok, vocab, g, seed);
      SCOPED_TRACE(std::string(tool_format_name(f)) + ": " + r.text);
      ASSERT_TRUE(r.ended);
      const ParsedReply p = parse_tool_calls(r.text, f, tool_names(t), t.tools);
      ASSERT_EQ(p.calls.size(), 1u);
      const ojson args = ojson::parse(p.calls[0].arguments);
      EXPECT_TRUE(shaped(args["code"], "AAA-99")) << args;
      EXPECT_TRUE(shaped(args["day"], "9999-99-99")) << args;
      EXPECT_TRUE(ipv4(args["host"])) << args;
      const std::string note = args["note"];
      EXPECT_NE(note.find("ok"), std::string::npos) << args;
      const auto chars = std::count_if(note.begin(), note.end(),
                                       [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
      EXPECT_LE(chars, 8) << args;  // maxLength counts characters
    }
  }
  // A pattern the grammar cannot carry is refused, not left unenforced.
  t.tools[0]["function"]["parameters"]["properties"]["code"]["pattern"] = "^a|b$";
  EXPECT_THROW(tool_call_grammar(t, ToolFormat::kXmlFunction), Error);
}

// gpt-oss's grammar with its markers as special tokens (`<[ID]>`), which the harmony vocabulary
// has and no tokenizer here does: Qwen2.5's special tokens stand in for them, <|call|> as its eos
// <|im_end|> (in gpt-oss <|call|> ends generation too: the grammar must take the end token it
// expects as its lexeme). Analysis messages are drawn too (the markers' logits are raised).
TEST_F(ToolCallGrammar, HarmonyWithSpecialTokenMarkers) {
  const Tokenizer& tok = *tokenizer;
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
  // A drawn reply read back as ReplyChannels reads gpt-oss's: the stand-ins back to harmony's markers.
  auto read = [&](const Reply& r) {
    std::string text = r.text;
    for (const auto& [marker, qwen] : stand_in)
      for (size_t at; (at = text.find(qwen)) != std::string::npos;) text.replace(at, qwen.size(), marker);
    ReplyChannels ch(ReasoningFormat::kHarmony, false);
    ReplyChannels::Piece p = ch.push(text), end = ch.finish();
    p.calls.insert(p.calls.end(), end.calls.begin(), end.calls.end());
    p.reasoning += end.reasoning;
    p.content += end.content;
    return p;
  };
  auto expect_call = [](const ToolCall& c) {
    const ojson args = ojson::parse(c.arguments);
    if (c.name == "add") {
      EXPECT_TRUE(args["a"].is_number_integer()) << args;
    } else {
      EXPECT_EQ(c.name, "noop");
    }
  };
  t.choice = ToolRequest::Choice::kRequired;
  const std::string grammar = tool_call_grammar(t, ToolFormat::kHarmony, special);
  ASSERT_EQ(guidance::check(*vocab, guidance::make_spec("lark", grammar)), "") << grammar;
  int analysed = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const Reply r = draw(tok, vocab, grammar, seed, boost);
    SCOPED_TRACE(r.text);
    EXPECT_TRUE(r.ended);  // at <|call|>'s stand-in, an eos token
    const ReplyChannels::Piece p = read(r);
    ASSERT_EQ(p.calls.size(), 1u) << r.text;
    EXPECT_EQ(p.content, "");
    analysed += !p.reasoning.empty();
    expect_call(p.calls[0]);
  }
  EXPECT_GT(analysed, 0);  // some replies thought first

  // auto: each reply is a final answer (content, no call) or one well-formed call, which a
  // commentary preamble (content) may precede; both kinds are drawn.
  t.choice = ToolRequest::Choice::kAuto;
  const std::string auto_grammar = tool_call_grammar(t, ToolFormat::kHarmony, special);
  ASSERT_EQ(guidance::check(*vocab, guidance::make_spec("lark", auto_grammar)), "") << auto_grammar;
  int answers = 0, calls = 0;
  std::vector<int32_t> boost_end = boost;  // a final answer ends where the grammar lets it
  boost_end.push_back(kEos[0]);
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    const Reply r = draw(tok, vocab, auto_grammar, seed, boost_end);
    SCOPED_TRACE(r.text);
    if (!r.ended) continue;  // a long final text cut at the draw's limit
    const ReplyChannels::Piece p = read(r);
    ASSERT_LE(p.calls.size(), 1u) << r.text;
    if (p.calls.empty()) {
      EXPECT_NE(r.text.find(stand_in.at("<|channel|>") + "final"), std::string::npos);
      EXPECT_NE(p.content, "");
      ++answers;
    } else {
      expect_call(p.calls[0]);
      ++calls;
    }
  }
  EXPECT_GT(answers, 0);
  EXPECT_GT(calls, 0);
  // A call's header naming no function of the request is refused once it can be told apart.
  EXPECT_NE(follow(tok, vocab, auto_grammar, "<|box_start|>commentary to=functions.rm", false), "");
  EXPECT_EQ(follow(tok, vocab, auto_grammar, "<|box_start|>final<|box_end|>It is 4.", true), "");
}

}  // namespace
}  // namespace nbits::serve
