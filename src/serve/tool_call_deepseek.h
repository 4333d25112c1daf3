// DeepSeek's tool calls (templates that write <｜tool▁call▁begin｜>). R1, its distills (Qwen and
// Llama) and V3 write, calls "\n" apart inside one block:
//
//   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather
//   ```json
//   {"city": "Paris"}
//   ```<｜tool▁call▁end｜><｜tool▁calls▁end｜>
//
// V3.1 leaves out the type and the fence: <｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city":
// "Paris"}<｜tool▁call▁end｜>. Both are read whichever the template writes; the grammar of a
// required call follows the template's own. The markers are special tokens of DeepSeek's
// vocabularies (full-width bars, U+FF5C, and U+2581 for the spaces).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "nbits/chat_message.h"

namespace nbits::serve {

struct ToolRequest;

inline constexpr std::string_view kDeepSeekCallsBegin = "<｜tool▁calls▁begin｜>";
inline constexpr std::string_view kDeepSeekCallsEnd = "<｜tool▁calls▁end｜>";
inline constexpr std::string_view kDeepSeekCallBegin = "<｜tool▁call▁begin｜>";
inline constexpr std::string_view kDeepSeekCallEnd = "<｜tool▁call▁end｜>";
inline constexpr std::string_view kDeepSeekSep = "<｜tool▁sep｜>";

// The call of one body (what lies between call begin and call end, either form, blanks around
// allowed; arguments a JSON object, fenced or not, or a JSON string holding one); false when it
// is not one (nothing is written to `out`).
bool parse_deepseek_call(std::string_view body, ToolCall& out);

// The Lark rules of a calls block after its opening <｜tool▁calls▁begin｜>: `tail` is one call
// (parallel: one or more) of the allowed functions, each function's arguments by its own
// parameter schema, and the block's end. fenced: R1's form (type, name line, ```json fence), else
// V3.1's. mark: how a marker is written in Lark.
std::string deepseek_tool_rules(const ToolRequest& t, bool fenced,
                                const std::function<std::string(std::string_view)>& mark);

// The system text that presents the tools and the call syntax to a DeepSeek template that does
// not present tools itself (R1's distills).
std::string deepseek_tools_prompt(const ToolRequest& t, bool fenced);

}  // namespace nbits::serve
