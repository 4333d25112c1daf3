// The XML-style tool call of Qwen3-Coder, Qwen3.5, Nemotron 3 Nano and StepFun 3.5 (templates
// that write <function=NAME> and <parameter=NAME>), and of ByteDance Seed-OSS inside
// <seed:tool_call> with its values between the tags (<parameter=city>Paris</parameter>):
//
//   <tool_call>
//   <function=get_weather>
//   <parameter=city>
//   Paris
//   </parameter>
//   </function>
//   </tool_call>
//
// A value is the text between its tags less one newline at each end. Its JSON type comes from
// the function's parameter schema: "string" keeps the text, any other type takes the text as
// JSON (a value that does not parse stays a string); a parameter without a schema is JSON when
// it parses.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "nbits/chat_message.h"

namespace nbits::serve {

struct ToolRequest;

// The call of one <tool_call> body ("<function=...>...</function>", blanks around allowed);
// false when it is not one (nothing is written to `out`). tools: the request's tools (for the
// parameters' types; may be empty).
bool parse_xml_function_call(std::string_view body, const nlohmann::ordered_json& tools, ToolCall& out);

// The Lark rules of one required call: `call` is "<function=NAME>\n" + its parameters +
// "</function>" for each allowed function. Required parameters come in the schema's order, then
// each optional one may follow. String values are text of the schema's minLength / maxLength, its
// pattern and format (serve/schema_string_regex.h), up to "\n</parameter>" (enums: one of their
// values); other values are JSON by their schema. Throws nbits::Error for a pattern it cannot carry.
// compact: Seed-OSS's values, "<parameter=P>VALUE</parameter>\n" (no newlines around VALUE).
std::string xml_function_call_rules(const ToolRequest& t, bool compact = false);

}  // namespace nbits::serve
