// OpenAI tool calls for `nbits serve`: what a request's `tools` / `tool_choice` ask for, the chat
// format the model writes its calls in, the grammar that makes a reply a valid call when one is
// required (llguidance Lark, through GenerationOptions::guidance_*), and the parser that turns
// the reply's text back into message.tool_calls, whole or as a stream.
//
// Formats (the template receives `tools` itself for all but kGeneric, and for those whose template
// does not present them, such as DeepSeek-R1's distills: tools_prompt()):
// kHermes: <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call> (Qwen2.5, Qwen3, Hermes,
//   SmolLM3: templates that write <tool_call>);
// kLlama3: a reply that is {"name": ..., "parameters": {...}}, or <|python_tag|> and the same
//   (Llama 3.1 / 3.2 / 3.3: templates that write <|python_tag|> or ask for "a JSON for a function
//   call"); several calls separated by ';';
// kMistral: [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...] (v3) or
//   [TOOL_CALLS]name[ARGS]{...} once per call (v11 and later);
// kToolCallTag: <|tool_call|>[{"name": ..., "arguments": {...}}, ...] with or without a closing
//   <|/tool_call|> (Phi-4-mini, Granite 3: templates that write <|tool|> or <|tool_call|>);
// kXmlFunction: <tool_call>\n<function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n</function>\n</tool_call>
//   (Qwen3-Coder, Qwen3.5, Nemotron 3 Nano, StepFun 3.5: templates that write <function= and
//   <parameter=; serve/tool_call_xml.h);
// kSeedXmlFunction: ByteDance Seed-OSS's <seed:tool_call>\n<function=NAME>\n<parameter=P>VALUE</parameter>
//   \n</function>\n</seed:tool_call> (templates that write <seed:tool_call>);
// kHarmony: gpt-oss's channels, a call being the message
//   <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{...}<|call|> (templates that
//   write <|channel|> and <|message|>); tokenizer/chat_reply.h's ReplyChannels reads these replies;
// kDeepSeekR1 / kDeepSeekV31: <｜tool▁calls▁begin｜> + a <｜tool▁call▁begin｜>...<｜tool▁call▁end｜>
//   per call + <｜tool▁calls▁end｜>, R1's body `function<｜tool▁sep｜>NAME\n```json\n{...}\n``` `,
//   V3.1's `NAME<｜tool▁sep｜>{...}` (templates that write <｜tool▁call▁begin｜>, with ```json for R1;
//   serve/tool_call_deepseek.h);
// kGeneric, every other template: the tools are described in a system message and a call is the
//   JSON object {"tool_calls": [{"name": ..., "arguments": {...}}]}.
// A marker that is a special token reaches the parser only when the reply's text keeps special
// tokens (the server decodes replies with tools so).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "nbits/chat_message.h"

namespace nbits::serve {

enum class ToolFormat {
  kHermes,
  kLlama3,
  kMistral,
  kToolCallTag,
  kXmlFunction,
  kSeedXmlFunction,
  kHarmony,
  kDeepSeekR1,
  kDeepSeekV31,
  kGeneric
};

struct ToolRequest {
  enum class Choice { kAuto, kNone, kRequired, kNamed };
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();  // as the client gave them
  Choice choice = Choice::kAuto;
  std::string named;  // kNamed: the function
  bool parallel = true;
  bool any() const { return !tools.empty() && choice != Choice::kNone; }
};

// What opens and closes one call in each format; close "" = the call runs to the next opening
// marker or the reply's end (a closing marker left out is taken the same way). kHarmony and
// kGeneric: none.
struct ToolMarkers {
  std::string_view open, close;
};
ToolMarkers tool_markers(ToolFormat f);

// The format a chat template writes calls in ("" = no template: kGeneric).
ToolFormat tool_format(const std::string& chat_template);
const char* tool_format_name(ToolFormat f);

// The system text that presents the tools to a template without tool support (kGeneric).
std::string generic_tools_prompt(const ToolRequest& t);
// Whether a template presents `tools` to the model itself (it reads the variable).
bool template_presents_tools(const std::string& chat_template);
// The system text for a template that does not: the call syntax of its format where it has one
// of its own that the template alone does not teach (DeepSeek), else generic_tools_prompt.
std::string tools_prompt(const ToolRequest& t, ToolFormat f);
// JSON whitespace inside a call's arguments, bounded as the guidance room bounds it for schemas.
inline constexpr const char* kToolCallWhitespace = R"(( |\n{1,2}[ \t]{0,20}))";
// The Lark form of a marker text: "<[ID]>" where the model has it as one special token (its text
// alone could only be spelled with other tokens), else the quoted text.
using LarkMarker = std::function<std::string(std::string_view marker)>;
// The Lark grammar a reply must follow (serve/tool_call_grammar.cc):
// - tool_choice required / a named function: one call (or, with parallel_tool_calls, one or
//   more) of the allowed functions, arguments by their parameter schemas. kHarmony: an analysis
//   message may come first, then one call, which its <|call|> ends (the reply's end).
// - auto: free text that never spells the format's opening marker, or such text, the marker and
//   then calls as above (so a call the model starts is always well formed); kLlama3 and kGeneric,
//   whose calls are bare JSON, also a reply that opens with `{` and is a call. kHarmony: after
//   an optional analysis message, a final-channel answer, or a call that a commentary preamble
//   may precede. "" for none.
// marker: how the format's markers are written (unset: as quoted text).
std::string tool_call_grammar(const ToolRequest& t, ToolFormat f, const LarkMarker& marker = {});

// A reply's text split into content and the calls it makes. Arguments are compact JSON text.
// Besides its format's form, a reply that is only JSON is taken as calls when it is
// {"tool_calls": [...]} or one or more {"name": <a tool's name>, "arguments": {...}} objects (small
// models often leave out the <tool_call> tags, or put the JSON in a ```json fence).
struct ParsedReply {
  std::string content;
  std::vector<ToolCall> calls;  // ids filled by the caller
};
// tools: the request's tools, for kXmlFunction's parameter types (may be left out).
ParsedReply parse_tool_calls(std::string_view text, ToolFormat f, const std::vector<std::string>& names,
                             const nlohmann::ordered_json& tools = nlohmann::ordered_json::array());
// The names of a request's tools.
std::vector<std::string> tool_names(const ToolRequest& t);
// The functions a reply may call (every tool, or the named one), each with its parameter schema
// ({"type": "object"} when it has none).
struct AllowedFunction {
  std::string name;
  nlohmann::ordered_json params;
};
std::vector<AllowedFunction> allowed_functions(const ToolRequest& t);
// Lark rules choosing one of them: `call: call_0 | call_1 ...`, each `call_I: ` + body(name,
// "args_I"), and `args_I: %json` its parameter schema (JSON blanks bounded by kToolCallWhitespace).
std::string call_alternatives(
    const ToolRequest& t,
    const std::function<std::string(const std::string& name, const std::string& args)>& body);

// The same while the reply streams: text that cannot be part of a call is handed on at once;
// text that may be one is held until it is a call (then parsed) or cannot be one. A reply that
// opens with '{' is held to its end.
class ToolCallStream {
 public:
  ToolCallStream(ToolFormat f, std::vector<std::string> names,
                 nlohmann::ordered_json tools = nlohmann::ordered_json::array())
      : f_(f), names_(std::move(names)), tools_(std::move(tools)) {}
  // Returns the content that is final now; appends the calls completed by `piece` to `calls`.
  std::string push(std::string_view piece, std::vector<ToolCall>& calls);
  // End of the reply: whatever is held (an unfinished call stays text).
  std::string finish(std::vector<ToolCall>& calls);

 private:
  enum class State { kStart, kJson, kText };
  ToolFormat f_;
  std::vector<std::string> names_;
  nlohmann::ordered_json tools_;
  bool body(std::string_view text, std::vector<ToolCall>& calls) const;  // a marked call's body
  State state_ = State::kStart;
  std::string held_;
  bool in_call_ = false;
};

}  // namespace nbits::serve
