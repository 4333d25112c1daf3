// serve/tool_call_deepseek: DeepSeek's calls blocks (R1 and its distills, V3, V3.1) read whole and
// streamed in every split, the format from the templates, and the grammar of a required call.
#include "serve/tool_call_deepseek.h"

#include <gtest/gtest.h>

#include "serve/tool_calls.h"

namespace nbits::serve {
namespace {

using ojson = nlohmann::ordered_json;

const std::vector<std::string> kNames = {"get_weather", "add"};

std::string cat(std::initializer_list<std::string_view> parts) {
  std::string s;
  for (std::string_view p : parts) s += p;
  return s;
}

void expect_same_in_every_split(const std::string& text, ToolFormat f) {
  const ParsedReply whole = parse_tool_calls(text, f, kNames);
  for (size_t step = 1; step <= 9; ++step) {
    ToolCallStream s(f, kNames);
    std::vector<ToolCall> calls;
    std::string content;
    for (size_t i = 0; i < text.size(); i += step)
      content += s.push(std::string_view(text).substr(i, step), calls);
    content += s.finish(calls);
    if (!calls.empty() && content.find_first_not_of(" \n") == std::string::npos) content.clear();
    EXPECT_EQ(content, whole.content) << "step " << step;
    ASSERT_EQ(calls.size(), whole.calls.size()) << "step " << step;
    for (size_t i = 0; i < calls.size(); ++i) {
      EXPECT_EQ(calls[i].name, whole.calls[i].name);
      EXPECT_EQ(calls[i].arguments, whole.calls[i].arguments);
    }
  }
}

// The tool-call lines of llama.cpp's copies of the DeepSeek templates.
constexpr const char* kR1Template =
    "{%- for tool in message['tool_calls']-%}{{'<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' "
    "+ "
    "tool['type'] + '<｜tool▁sep｜>' + tool['function']['name'] + '\\n' + '```json' + '\\n' + "
    "tool['function']['arguments'] | tojson + '\\n' + '```' + '<｜tool▁call▁end｜>'}}{%- endfor -%}";
constexpr const char* kV31Template =
    "{%- if tools -%}{{ tools }}{%- endif -%}{{'<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>'+ "
    "tool['function']['name'] + '<｜tool▁sep｜>' + tool['function']['arguments'] | tojson + "
    "'<｜tool▁call▁end｜>'}}";

TEST(DeepSeekToolCalls, FormatFromTheTemplate) {
  EXPECT_EQ(tool_format(kR1Template), ToolFormat::kDeepSeekR1);
  EXPECT_EQ(tool_format(kV31Template), ToolFormat::kDeepSeekV31);
  EXPECT_STREQ(tool_format_name(ToolFormat::kDeepSeekR1), "deepseek_r1");
  EXPECT_STREQ(tool_format_name(ToolFormat::kDeepSeekV31), "deepseek_v3_1");
  // R1's distills render calls in the history but never present `tools`: the server does.
  EXPECT_FALSE(template_presents_tools(kR1Template));
  EXPECT_TRUE(template_presents_tools(kV31Template));
  EXPECT_TRUE(template_presents_tools("{{ tools|tojson }}"));
  EXPECT_FALSE(template_presents_tools("{{ message.tool_calls }}{{ my_tools }}{{ tools_x }}"));
  ToolRequest t;
  t.tools = ojson::parse(R"([{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}])");
  const std::string r1 = tools_prompt(t, ToolFormat::kDeepSeekR1);
  EXPECT_NE(r1.find("get_weather"), std::string::npos);
  EXPECT_NE(r1.find(cat({kDeepSeekCallBegin, "function", kDeepSeekSep, "get_weather\n```json\n"})),
            std::string::npos)
      << r1;
  const std::string v31 = tools_prompt(t, ToolFormat::kDeepSeekV31);
  EXPECT_NE(v31.find(cat({kDeepSeekCallBegin, "get_weather", kDeepSeekSep, "{"})), std::string::npos) << v31;
  EXPECT_EQ(tools_prompt(t, ToolFormat::kHermes), generic_tools_prompt(t));
}

TEST(DeepSeekToolCalls, R1Blocks) {
  const std::string text =
      cat({"Let me check.", kDeepSeekCallsBegin, kDeepSeekCallBegin, "function", kDeepSeekSep,
           "get_weather\n```json\n{\"city\": \"Paris\", \"days\": [1, 2]}\n```", kDeepSeekCallEnd, "\n",
           kDeepSeekCallBegin, "function", kDeepSeekSep, "add\n```json\n{\"a\": 1}\n```", kDeepSeekCallEnd,
           kDeepSeekCallsEnd});
  const ParsedReply r = parse_tool_calls(text, ToolFormat::kDeepSeekR1, kNames);
  EXPECT_EQ(r.content, "Let me check.\n");  // the newline between the calls too; no markers
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[0].arguments, R"({"city":"Paris","days":[1,2]})");
  EXPECT_EQ(r.calls[1].name, "add");
  EXPECT_EQ(r.calls[1].arguments, R"({"a":1})");
  expect_same_in_every_split(text, ToolFormat::kDeepSeekR1);
  // The block's end left out (the reply ended at the eos), and a call the other form.
  const std::string open =
      cat({kDeepSeekCallsBegin, kDeepSeekCallBegin, "add", kDeepSeekSep, "{\"a\": 5}", kDeepSeekCallEnd});
  const ParsedReply o = parse_tool_calls(open, ToolFormat::kDeepSeekR1, kNames);
  EXPECT_EQ(o.content, "");
  ASSERT_EQ(o.calls.size(), 1u);
  EXPECT_EQ(o.calls[0].arguments, R"({"a":5})");
  expect_same_in_every_split(open, ToolFormat::kDeepSeekR1);
}

TEST(DeepSeekToolCalls, V31Blocks) {
  // The arguments as an object, and as the JSON string the template's `| tojson` writes.
  const std::string text = cat({kDeepSeekCallsBegin, kDeepSeekCallBegin, "get_weather", kDeepSeekSep,
                                "{\"city\":\"Paris\"}", kDeepSeekCallEnd, kDeepSeekCallBegin, "add",
                                kDeepSeekSep, "\"{\\\"a\\\": 2}\"", kDeepSeekCallEnd, kDeepSeekCallsEnd});
  const ParsedReply r = parse_tool_calls(text, ToolFormat::kDeepSeekV31, kNames);
  EXPECT_EQ(r.content, "");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].arguments, R"({"city":"Paris"})");
  EXPECT_EQ(r.calls[1].name, "add");
  EXPECT_EQ(r.calls[1].arguments, R"({"a":2})");
  expect_same_in_every_split(text, ToolFormat::kDeepSeekV31);
  // A call unfinished when the reply ends stays text, less the block's markers.
  const std::string cut = cat({kDeepSeekCallsBegin, kDeepSeekCallBegin, "add", kDeepSeekSep, "{\"a\": "});
  const ParsedReply c = parse_tool_calls(cut, ToolFormat::kDeepSeekV31, kNames);
  EXPECT_TRUE(c.calls.empty());
  EXPECT_EQ(c.content, cat({kDeepSeekCallBegin, "add", kDeepSeekSep, "{\"a\": "}));
}

TEST(DeepSeekToolCalls, BrokenBodiesAreNotCalls) {
  for (const std::string& body :
       {std::string("function") + std::string(kDeepSeekSep) + "\n```json\n{}\n```",  // no name
        std::string("get_weather") + std::string(kDeepSeekSep) + "[1, 2]",           // not an object
        std::string("get weather") + std::string(kDeepSeekSep) + "{}",               // a blank in the name
        std::string("add") + std::string(kDeepSeekSep) + "{\"a\": 1} trailing",      // more than the JSON
        std::string("add {\"a\": 1}")}) {                                            // no separator
    ToolCall c;
    EXPECT_FALSE(parse_deepseek_call(body, c)) << body;
    const std::string text = cat({kDeepSeekCallBegin, body, kDeepSeekCallEnd});
    const ParsedReply r = parse_tool_calls(text, ToolFormat::kDeepSeekR1, kNames);
    EXPECT_TRUE(r.calls.empty()) << body;
    EXPECT_EQ(r.content, text);
  }
  ToolCall deep;  // nesting beyond the JSON depth bound is refused, not parsed
  EXPECT_FALSE(parse_deepseek_call(
      "add" + std::string(kDeepSeekSep) + std::string(5000, '[') + "1" + std::string(5000, ']'), deep));
}

TEST(DeepSeekToolCalls, Grammar) {
  ToolRequest t;
  t.tools = ojson::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "add"}}])");
  const std::string a = tool_call_grammar(t, ToolFormat::kDeepSeekR1);  // auto: text, or a block
  EXPECT_EQ(a.rfind("start: TEXT? | text_then_marker tail\n", 0), 0u) << a;
  t.choice = ToolRequest::Choice::kRequired;
  const std::string r1 = tool_call_grammar(t, ToolFormat::kDeepSeekR1);
  EXPECT_EQ(r1.rfind(cat({"start: \"", kDeepSeekCallsBegin, "\" tail\ntail: call (\"\\n\" call)* \"",
                          kDeepSeekCallsEnd, "\"\ncall: call_0 | call_1\n"}),
                     0),
            0u)
      << r1;
  EXPECT_NE(r1.find(cat({"call_0: \"", kDeepSeekCallBegin, "\" \"function\" \"", kDeepSeekSep,
                         "\" \"get_weather\\n```json\\n\" args_0 \"\\n```\" \"", kDeepSeekCallEnd, "\""})),
            std::string::npos)
      << r1;
  EXPECT_NE(r1.find(R"("required":["city"])"), std::string::npos) << r1;
  t.parallel = false;
  t.choice = ToolRequest::Choice::kNamed;
  t.named = "add";
  auto special = [](std::string_view m) { return "<[" + std::to_string(m.size()) + "]>"; };
  const std::string v31 = tool_call_grammar(t, ToolFormat::kDeepSeekV31, special);
  EXPECT_EQ(v31.find("get_weather"), std::string::npos) << v31;
  const std::string begin = "<[" + std::to_string(kDeepSeekCallBegin.size()) + "]>";
  EXPECT_NE(v31.find("call_0: " + begin + " \"add\" <[" + std::to_string(kDeepSeekSep.size()) + "]> args_0"),
            std::string::npos)
      << v31;
  EXPECT_EQ(v31.find("call)*"), std::string::npos) << v31;  // one call
}

}  // namespace
}  // namespace nbits::serve
