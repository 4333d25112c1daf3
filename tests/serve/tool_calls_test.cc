// serve/tool_calls: the formats' parsers, whole and streamed in every split, and the grammar of a
// required call.
#include "serve/tool_calls.h"

#include <gtest/gtest.h>

#include <map>

namespace nbits::serve {
namespace {

const std::vector<std::string> kNames = {"get_weather", "add"};

using ojson = nlohmann::ordered_json;

std::string streamed(std::string_view text, ToolFormat f, size_t step, std::vector<ToolCall>& calls,
                     const ojson& tools) {
  ToolCallStream s(f, kNames, tools);
  std::string out;
  for (size_t i = 0; i < text.size(); i += step) out += s.push(text.substr(i, step), calls);
  return out + s.finish(calls);
}

void expect_same_in_every_split(std::string_view text, ToolFormat f, const ojson& tools = ojson::array()) {
  const ParsedReply whole = parse_tool_calls(text, f, kNames, tools);
  for (size_t step = 1; step <= 7; ++step) {
    std::vector<ToolCall> calls;
    std::string content = streamed(text, f, step, calls, tools);
    if (!calls.empty() && content.find_first_not_of(" \n") == std::string::npos) content.clear();
    EXPECT_EQ(content, whole.content) << "step " << step;
    ASSERT_EQ(calls.size(), whole.calls.size()) << "step " << step;
    for (size_t i = 0; i < calls.size(); ++i) {
      EXPECT_EQ(calls[i].name, whole.calls[i].name);
      EXPECT_EQ(calls[i].arguments, whole.calls[i].arguments);
    }
  }
}

TEST(ToolCalls, HermesBlocksAmongText) {
  const std::string text =
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\"}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"b\": 2, \"a\": 3}}\n</tool_call>";
  const ParsedReply r = parse_tool_calls(text, ToolFormat::kHermes, kNames);
  EXPECT_EQ(r.content, "Let me check.\n\n");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[0].arguments, R"({"city":"Paris"})");
  EXPECT_EQ(r.calls[1].arguments, R"({"b":2,"a":3})");  // the model's key order
  expect_same_in_every_split(text, ToolFormat::kHermes);
}

TEST(ToolCalls, TextThatOnlyLooksLikeACallStaysText) {
  for (const std::string& text :
       {std::string("a < b and <tool> tags"), std::string("<tool_call>not json</tool_call> x"),
        std::string("ends inside <tool_ca"), std::string("{\"name\": \"unknown\", \"arguments\": {}}"),
        std::string("{\"answer\": 42}"), std::string("```json\n{\"x\": 1}\n```")}) {
    SCOPED_TRACE(text);
    const ParsedReply r = parse_tool_calls(text, ToolFormat::kHermes, kNames);
    EXPECT_TRUE(r.calls.empty());
    EXPECT_EQ(r.content, text);
    expect_same_in_every_split(text, ToolFormat::kHermes);
  }
}

TEST(ToolCalls, BareFencedAndGenericJsonCalls) {
  const std::vector<std::pair<std::string, size_t>> cases = {
      {"{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}", 1},
      {"```json\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n```", 1},
      {"{\"name\": \"add\", \"arguments\": {\"a\": 1}}\n{\"name\": \"get_weather\", \"arguments\": "
       "{\"city\": \"a}\\\"b\"}}",
       2},
      {"{\"tool_calls\": [{\"name\": \"add\", \"arguments\": {\"a\": 1}}, {\"name\": \"add\", \"arguments\": "
       "\"{}\"}]}",
       2},
  };
  for (const auto& [text, n] : cases)
    for (ToolFormat f : {ToolFormat::kHermes, ToolFormat::kGeneric}) {
      SCOPED_TRACE(text);
      const ParsedReply r = parse_tool_calls(text, f, kNames);
      EXPECT_EQ(r.calls.size(), n);
      EXPECT_EQ(r.content, "");
      expect_same_in_every_split(text, f);
    }
  const ParsedReply q = parse_tool_calls(
      "{\"name\": \"add\", \"arguments\": {\"a\": 1}}\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"a}\\\"b\"}}",
      ToolFormat::kGeneric, kNames);
  ASSERT_EQ(q.calls.size(), 2u);
  EXPECT_EQ(q.calls[1].arguments, R"({"city":"a}\"b"})");
}

TEST(ToolCalls, UnclosedBlockAtTheEndIsACallWhenItsJsonIsWhole) {
  const ParsedReply r = parse_tool_calls("<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1}}",
                                         ToolFormat::kHermes, kNames);
  ASSERT_EQ(r.calls.size(), 1u);
  const ParsedReply cut =
      parse_tool_calls("<tool_call>\n{\"name\": \"add\", \"argu", ToolFormat::kHermes, kNames);
  EXPECT_TRUE(cut.calls.empty());
  EXPECT_EQ(cut.content, "<tool_call>\n{\"name\": \"add\", \"argu");
}

// The native formats of Llama 3.x, Mistral (v3 JSON list and v11 name[ARGS]) and the
// <|tool_call|> tag (Phi-4-mini, Granite): parsed whole and streamed in every split, text before a
// call kept, and a marker followed by what is not a call left as text.
TEST(ToolCalls, NativeFormatsOfLlamaMistralPhiAndGranite) {
  struct Case {
    ToolFormat f;
    std::string text, content;
    std::vector<std::pair<std::string, std::string>> calls;  // name, arguments
  };
  const std::vector<Case> cases = {
      {ToolFormat::kLlama3,
       R"({"name": "get_weather", "parameters": {"city": "Oslo"}})",
       "",
       {{"get_weather", R"({"city":"Oslo"})"}}},
      {ToolFormat::kLlama3,
       R"(<|python_tag|>{"name": "add", "parameters": {"a": 1, "b": 2}}; {"name": "get_weather", "parameters": {"city": "Rome"}})",
       "",
       {{"add", R"({"a":1,"b":2})"}, {"get_weather", R"({"city":"Rome"})"}}},
      {ToolFormat::kMistral,
       R"([TOOL_CALLS][{"name": "add", "arguments": {"a": 4, "b": 5}}, {"name": "get_weather", "arguments": {"city": "Lima"}}])",
       "",
       {{"add", R"({"a":4,"b":5})"}, {"get_weather", R"({"city":"Lima"})"}}},
      {ToolFormat::kMistral,
       R"(Sure.[TOOL_CALLS]get_weather[ARGS]{"city": "Kyiv"}[TOOL_CALLS]add[ARGS]{"a": 1, "b": 1})",
       "Sure.",
       {{"get_weather", R"({"city":"Kyiv"})"}, {"add", R"({"a":1,"b":1})"}}},
      {ToolFormat::kToolCallTag,
       R"(<|tool_call|>[{"name": "add", "arguments": {"a": 2, "b": 3}}]<|/tool_call|>)",
       "",
       {{"add", R"({"a":2,"b":3})"}}},
      {ToolFormat::kToolCallTag,
       R"(Checking. <|tool_call|>[{"name": "get_weather", "arguments": {"city": "Pune"}}])",
       "Checking. ",
       {{"get_weather", R"({"city":"Pune"})"}}},
      {ToolFormat::kMistral, "[TOOL_CALLS] no call here", "[TOOL_CALLS] no call here", {}},
      {ToolFormat::kToolCallTag, "a [list] and <|tool_call|>{oops", "a [list] and <|tool_call|>{oops", {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(tool_format_name(c.f)) + ": " + c.text);
    const ParsedReply r = parse_tool_calls(c.text, c.f, kNames);
    EXPECT_EQ(r.content, c.content);
    ASSERT_EQ(r.calls.size(), c.calls.size());
    for (size_t i = 0; i < c.calls.size(); ++i) {
      EXPECT_EQ(r.calls[i].name, c.calls[i].first);
      EXPECT_EQ(r.calls[i].arguments, c.calls[i].second);
    }
    expect_same_in_every_split(c.text, c.f);
  }
}

TEST(ToolCalls, FormatAndGrammar) {
  EXPECT_EQ(tool_format("...<tool_call>\n{\"name\": ...}</tool_call>..."), ToolFormat::kHermes);
  EXPECT_EQ(tool_format("{% for m in messages %}{{ m.content }}{% endfor %}"), ToolFormat::kGeneric);
  EXPECT_EQ(tool_format("{{- '<|python_tag|>' + tool_call.name }}"), ToolFormat::kLlama3);
  EXPECT_EQ(tool_format("Given the following functions, please respond with a JSON for a function call"),
            ToolFormat::kLlama3);
  EXPECT_EQ(tool_format("{{ '[TOOL_CALLS]' + tool_calls|tojson }}"), ToolFormat::kMistral);
  EXPECT_EQ(tool_format("<|system|>{{ content }}<|tool|>{{ tools }}<|/tool|>"), ToolFormat::kToolCallTag);
  EXPECT_EQ(tool_format("{{ '<|tool_call|>' + tool_calls|tojson }}"), ToolFormat::kToolCallTag);
  ToolRequest t;
  t.tools = nlohmann::ordered_json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "add"}}])");
  t.choice = ToolRequest::Choice::kNone;
  EXPECT_EQ(tool_call_grammar(t, ToolFormat::kHermes), "");  // none: no grammar
  t.choice = ToolRequest::Choice::kAuto;                     // text, or text up to the marker and then calls
  const std::string a = tool_call_grammar(t, ToolFormat::kHermes);
  EXPECT_EQ(a.rfind("start: TEXT? | text_then_marker tail\n", 0), 0u) << a;
  EXPECT_NE(a.find("text_then_marker[lazy]: /(?s:.*)\\x{3C}tool_call\\x{3E}/\n"), std::string::npos) << a;
  t.choice = ToolRequest::Choice::kRequired;
  const std::string g = tool_call_grammar(t, ToolFormat::kHermes);
  EXPECT_EQ(
      g.rfind("start: \"<tool_call>\" tail\ntail: \"\\n\" body \"\\n</tool_call>\" (\"\\n\" \"<tool_call>\" "
              "\"\\n\" body \"\\n</tool_call>\")*\n",
              0),
      0u)
      << g;
  EXPECT_NE(g.find(R"({"const":"get_weather"})"), std::string::npos) << g;
  EXPECT_NE(g.find(R"({"const":"add"})"), std::string::npos) << g;
  t.parallel = false;
  t.choice = ToolRequest::Choice::kNamed;
  t.named = "add";
  const std::string one = tool_call_grammar(t, ToolFormat::kGeneric);
  EXPECT_EQ(one.find("get_weather"), std::string::npos) << one;
  EXPECT_NE(one.find(R"("maxItems":1)"), std::string::npos) << one;
  EXPECT_NE(generic_tools_prompt(t).find("get_weather"), std::string::npos);
  // The native formats: the marker (its text, or the special token the server names), then the
  // call JSON; Llama 3's with "parameters".
  t.choice = ToolRequest::Choice::kRequired;
  const std::string ll = tool_call_grammar(t, ToolFormat::kLlama3);
  EXPECT_NE(ll.find(R"("required":["name","parameters"])"), std::string::npos) << ll;
  const std::string mi = tool_call_grammar(t, ToolFormat::kMistral);
  EXPECT_EQ(mi.rfind("start: \"[TOOL_CALLS]\" tail\ntail: body\n", 0), 0u) << mi;
  EXPECT_NE(mi.find(R"("maxItems":1)"), std::string::npos) << mi;
  auto special = [](std::string_view m) { return m == "<|tool_call|>" ? std::string("<[200021]>") : ""; };
  const std::string tag = tool_call_grammar(t, ToolFormat::kToolCallTag, special);
  EXPECT_EQ(tag.rfind("start: <[200021]> tail\ntail: body\n", 0), 0u) << tag;
  // auto with a special-token marker: the greedy text ends at the token.
  t.choice = ToolRequest::Choice::kAuto;
  const std::string tag_auto = tool_call_grammar(t, ToolFormat::kToolCallTag, special);
  EXPECT_EQ(tag_auto.rfind("start: TEXT? | TEXT? <[200021]> tail\n", 0), 0u) << tag_auto;
}

// gpt-oss's harmony format: the template presents the tools; a required call may follow an
// analysis message, and each function's header fixes which schema its arguments follow.
TEST(ToolCalls, HarmonyGrammar) {
  EXPECT_EQ(tool_format("{{- '<|start|>assistant<|channel|>analysis<|message|>' + m.thinking + '<|end|>' }}"),
            ToolFormat::kHarmony);
  EXPECT_STREQ(tool_format_name(ToolFormat::kHarmony), "harmony");
  ToolRequest t;
  t.tools = nlohmann::ordered_json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "add"}}])");
  // auto: a final answer, or a call (after a commentary preamble or none).
  const std::string auto_g = tool_call_grammar(t, ToolFormat::kHarmony);
  EXPECT_EQ(auto_g.rfind("start: analysis? (preamble? call | final)\n", 0), 0u) << auto_g;
  EXPECT_NE(auto_g.find("final: \"<|channel|>\" \"final\" \"<|message|>\" FINAL_TEXT\n"), std::string::npos)
      << auto_g;
  t.choice = ToolRequest::Choice::kRequired;
  const std::map<std::string_view, int> ids = {{"<|channel|>", 200005},   {"<|message|>", 200008},
                                               {"<|end|>", 200007},       {"<|start|>", 200006},
                                               {"<|constrain|>", 200003}, {"<|call|>", 200012}};
  auto special = [&](std::string_view m) { return "<[" + std::to_string(ids.at(m)) + "]>"; };
  const std::string g = tool_call_grammar(t, ToolFormat::kHarmony, special);
  EXPECT_EQ(
      g.rfind("start: analysis? call\n"
              "analysis: <[200005]> \"analysis\" <[200008]> /(.|\\n)+/ <[200007]> <[200006]> \"assistant\"\n"
              "call: call_0 | call_1\n"
              "call_0: <[200005]> \"commentary to=functions.get_weather \" <[200003]> \"json\" <[200008]> "
              "args_0 <[200012]>\n"
              "args_0: %json {\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},",
              0),
      0u)
      << g;
  EXPECT_NE(g.find("args_1: %json {\"type\":\"object\",\"x-guidance\""), std::string::npos) << g;
  t.choice = ToolRequest::Choice::kNamed;
  t.named = "add";
  const std::string one = tool_call_grammar(t, ToolFormat::kHarmony);  // markers as text
  EXPECT_EQ(one.find("get_weather"), std::string::npos) << one;
  EXPECT_NE(
      one.find("call: call_0\ncall_0: \"<|channel|>\" \"commentary to=functions.add \" \"<|constrain|>\""),
      std::string::npos)
      << one;
}

}  // namespace
}  // namespace nbits::serve

namespace nbits::serve {
namespace {

// Qwen3-Coder / Qwen3.5's XML calls: values typed by the parameters' schemas.
TEST(ToolCalls, XmlFunctionCalls) {
  EXPECT_EQ(tool_format("<tool_call>\\n<function=example_function_name>\\n<parameter=example_parameter_1>\\n"
                        "value_1\\n</parameter>\\n</function>\\n</tool_call>"),
            ToolFormat::kXmlFunction);
  EXPECT_STREQ(tool_format_name(ToolFormat::kXmlFunction), "xml_function");
  const ojson tools = ojson::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
      "city": {"type": "string"}, "days": {"type": "integer"}, "code": {"type": "string"},
      "unit": {"enum": ["celsius", "fahrenheit"]}, "where": {"type": "object"}}}}},
    {"type": "function", "function": {"name": "add"}}])");
  const std::string text =
      "I will look it up.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nNew York\n</parameter>\n"
      "<parameter=days>\n3\n</parameter>\n<parameter=code>\n42\n</parameter>\n<parameter=unit>\ncelsius\n"
      "</parameter>\n<parameter=where>\n{\"lat\": 1.5}\n</parameter>\n</function>\n</tool_call>\n"
      "<tool_call>\n<function=add>\n<parameter=a>\n2\n</parameter>\n<parameter=note>\ntwo\nlines\n</"
      "parameter>\n"
      "</function>\n</tool_call>";
  const ParsedReply r = parse_tool_calls(text, ToolFormat::kXmlFunction, kNames, tools);
  EXPECT_EQ(r.content, "I will look it up.\n\n");  // the newline between the calls too
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[0].arguments,
            R"({"city":"New York","days":3,"code":"42","unit":"celsius","where":{"lat":1.5}})");
  EXPECT_EQ(r.calls[1].name, "add");  // no schema: JSON when it parses, else the text
  EXPECT_EQ(r.calls[1].arguments, R"({"a":2,"note":"two\nlines"})");
  expect_same_in_every_split(text, ToolFormat::kXmlFunction, tools);
  // A value without its newlines (as ByteDance Seed writes them), and a Hermes JSON body.
  ParsedReply j =
      parse_tool_calls("<tool_call><function=add><parameter=a>7</parameter></function></tool_call>",
                       ToolFormat::kXmlFunction, kNames, tools);
  ASSERT_EQ(j.calls.size(), 1u);
  EXPECT_EQ(j.calls[0].arguments, R"({"a":7})");
  j = parse_tool_calls("<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1}}\n</tool_call>",
                       ToolFormat::kXmlFunction, kNames, tools);
  ASSERT_EQ(j.calls.size(), 1u);
  EXPECT_EQ(j.calls[0].arguments, R"({"a":1})");
  // Broken forms stay text.
  for (const char* bad : {"<tool_call>\n<function=add>\n<parameter=a>\n2\n</function>\n</tool_call>",
                          "<tool_call>\n<function=add>\n<parameter=a>\n2\n</parameter>\n</tool_call>",
                          "<tool_call>\n<function=>\n</function>\n</tool_call>",
                          "<tool_call>\n<function=add>\n</function>\ntrailing\n</tool_call>"}) {
    const ParsedReply b = parse_tool_calls(bad, ToolFormat::kXmlFunction, kNames, tools);
    EXPECT_TRUE(b.calls.empty()) << bad;
    EXPECT_EQ(b.content, bad);
  }
}

TEST(ToolCalls, XmlFunctionGrammar) {
  ToolRequest t;
  t.tools = ojson::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
      "city": {"type": "string", "maxLength": 12}, "unit": {"enum": ["celsius", "fahrenheit"]},
      "days": {"type": "integer"}}, "required": ["unit", "city"]}}},
    {"type": "function", "function": {"name": "add"}}])");
  t.choice = ToolRequest::Choice::kRequired;
  t.parallel = false;
  const std::string g = tool_call_grammar(t, ToolFormat::kXmlFunction);
  EXPECT_EQ(
      g.rfind("start: \"<tool_call>\" tail\ntail: \"\\n\" call \"\\n\" \"</tool_call>\"\ncall: f0 | f1\n", 0),
      0u)
      << g;
  // Required parameters in the schema's order, then the optional ones, maybe.
  EXPECT_NE(g.find("f0: \"<function=get_weather>\\n\" f0_p0 f0_p1 [f0_p2] \"</function>\""),
            std::string::npos)
      << g;
  EXPECT_NE(g.find("f0_p0_v[suffix=\"\\n</parameter>\\n\"]: /(?s:.{0,12})/"), std::string::npos) << g;
  EXPECT_NE(g.find("f0_p1: \"<parameter=unit>\\n\" (\"celsius\" | \"fahrenheit\") \"\\n</parameter>\\n\""),
            std::string::npos)
      << g;
  EXPECT_NE(g.find("f0_p2_v: %json {\"type\":\"integer\""), std::string::npos) << g;
  EXPECT_NE(g.find("f1: \"<function=add>\\n\" \"</function>\""), std::string::npos) << g;
  // Seed-OSS: its own block markers, values between the tags.
  t.parallel = true;
  const std::string seed = tool_call_grammar(t, ToolFormat::kSeedXmlFunction);
  EXPECT_EQ(seed.rfind(
                "start: \"<seed:tool_call>\" tail\ntail: \"\\n\" call \"\\n\" \"</seed:tool_call>\" "
                "(\"\\n\" \"<seed:tool_call>\" \"\\n\" call \"\\n\" \"</seed:tool_call>\")*\ncall: f0 | f1\n",
                0),
            0u)
      << seed;
  EXPECT_NE(seed.find("f0_p0_v[suffix=\"</parameter>\\n\"]: /(?s:.{0,12})/"), std::string::npos) << seed;
  EXPECT_NE(seed.find("f0_p1: \"<parameter=unit>\" (\"celsius\" | \"fahrenheit\") \"</parameter>\\n\""),
            std::string::npos)
      << seed;
}

// ByteDance Seed-OSS: Qwen3-Coder's XML inside <seed:tool_call>, values between the tags.
TEST(ToolCalls, SeedXmlFunctionCalls) {
  EXPECT_EQ(tool_format("{%- set toolcall_begin_token = '<seed:tool_call>' -%}<function=x><parameter=y>"),
            ToolFormat::kSeedXmlFunction);
  EXPECT_STREQ(tool_format_name(ToolFormat::kSeedXmlFunction), "seed_xml_function");
  const ojson tools = ojson::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
      "city": {"type": "string"}, "days": {"type": "integer"}}}}},
    {"type": "function", "function": {"name": "add"}}])");
  const std::string text =
      "Checking.\n<seed:tool_call>\n<function=get_weather>\n<parameter=city>New York</parameter>\n"
      "<parameter=days>3</parameter>\n</function>\n</seed:tool_call>\n<seed:tool_call>\n<function=add>\n"
      "<parameter=a>2</parameter>\n</function>\n</seed:tool_call>";
  const ParsedReply r = parse_tool_calls(text, ToolFormat::kSeedXmlFunction, kNames, tools);
  EXPECT_EQ(r.content, "Checking.\n\n");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[0].arguments, R"({"city":"New York","days":3})");
  EXPECT_EQ(r.calls[1].arguments, R"({"a":2})");
  expect_same_in_every_split(text, ToolFormat::kSeedXmlFunction, tools);
  // Qwen3-Coder's block is not Seed's: text there.
  const std::string other =
      "<tool_call>\n<function=add>\n<parameter=a>\n2\n</parameter>\n</function>\n</tool_call>";
  const ParsedReply o = parse_tool_calls(other, ToolFormat::kSeedXmlFunction, kNames, tools);
  EXPECT_TRUE(o.calls.empty());
  EXPECT_EQ(o.content, other);
}

}  // namespace
}  // namespace nbits::serve
