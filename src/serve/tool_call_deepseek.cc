#include "serve/tool_call_deepseek.h"

#include <nlohmann/json.hpp>

#include "base/json_depth.h"
#include "serve/tool_calls.h"

namespace nbits::serve {
namespace {

using ojson = nlohmann::ordered_json;

std::string_view trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \n\r\t");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \n\r\t") - b + 1);
}

// A function name as a model writes it: no blanks, braces or quotes.
bool plain_name(std::string_view s) {
  return !s.empty() && s.find_first_of(" \n\r\t{}[]\"'`<>") == std::string_view::npos;
}

// ```json ... ``` (or ``` ... ```) around the arguments, taken off.
std::string_view unfence(std::string_view s) {
  s = trim(s);
  if (s.substr(0, 3) != "```") return s;
  const size_t nl = s.find('\n');
  if (nl == std::string_view::npos) return s;
  s = trim(s.substr(nl + 1));
  if (s.size() >= 3 && s.substr(s.size() - 3) == "```") s = trim(s.substr(0, s.size() - 3));
  return s;
}

// The arguments as compact JSON: an object, or a JSON string that holds one (the templates write
// the history's arguments through `| tojson`, a string of JSON).
bool arguments(std::string_view text, std::string& out) {
  text = unfence(text);
  if (text.empty() || json_nesting_depth(text, kMaxOrderedJsonDepth) > kMaxOrderedJsonDepth) return false;
  ojson j = ojson::parse(text, nullptr, false);
  if (j.is_string()) {
    const std::string inner = j.get<std::string>();
    if (json_nesting_depth(inner, kMaxOrderedJsonDepth) > kMaxOrderedJsonDepth) return false;
    j = ojson::parse(inner, nullptr, false);
  }
  if (j.is_discarded() || !j.is_object()) return false;
  out = j.dump();
  return true;
}

}  // namespace

bool parse_deepseek_call(std::string_view body, ToolCall& out) {
  const size_t sep = body.find(kDeepSeekSep);
  if (sep == std::string_view::npos) return false;
  const std::string_view head = trim(body.substr(0, sep)), rest = body.substr(sep + kDeepSeekSep.size());
  std::string args;
  // R1: the type, then the name alone on its line and the fenced arguments.
  if (head == "function") {
    const size_t nl = rest.find('\n');
    const std::string_view name = trim(rest.substr(0, nl));
    if (nl != std::string_view::npos && plain_name(name) && arguments(rest.substr(nl + 1), args)) {
      out = ToolCall{"", std::string(name), std::move(args)};
      return true;
    }
  }
  // V3.1: the name, then the arguments (a function may be called "function", but R1's form with
  // its name left out is not such a call).
  if (head == "function" && trim(rest).substr(0, 3) == "```") return false;
  if (!plain_name(head) || !arguments(rest, args)) return false;
  out = ToolCall{"", std::string(head), std::move(args)};
  return true;
}

std::string deepseek_tool_rules(const ToolRequest& t, bool fenced,
                                const std::function<std::string(std::string_view)>& mark) {
  const std::string sep = fenced ? "\"\\n\" " : "";  // between two calls of one block
  return "tail: call" + (t.parallel ? " (" + sep + "call)*" : std::string()) + " " + mark(kDeepSeekCallsEnd) +
         "\n" + call_alternatives(t, [&](const std::string& name, const std::string& args) {
           const std::string head = fenced
                                        ? "\"function\" " + mark(kDeepSeekSep) + " " +
                                              ojson(name + "\n```json\n").dump() + " " + args + " \"\\n```\""
                                        : ojson(name).dump() + " " + mark(kDeepSeekSep) + " " + args;
           return mark(kDeepSeekCallBegin) + " " + head + " " + mark(kDeepSeekCallEnd);
         });
}

std::string deepseek_tools_prompt(const ToolRequest& t, bool fenced) {
  ojson fns = ojson::array();
  for (const ojson& tool : t.tools) fns.push_back(tool["function"]);
  std::string s = "You have these functions (JSON schemas of their arguments in \"parameters\"):\n" +
                  fns.dump() + "\n\nTo call functions, answer with only the calls block, for example:\n";
  s += kDeepSeekCallsBegin;
  s += kDeepSeekCallBegin;
  s += fenced ? "function" + std::string(kDeepSeekSep) + "get_weather\n```json\n{\"city\": \"Paris\"}\n```"
              : "get_weather" + std::string(kDeepSeekSep) + "{\"city\": \"Paris\"}";
  s += kDeepSeekCallEnd;
  s += kDeepSeekCallsEnd;
  s += "\nwith one call per function call" + std::string(fenced ? ", a newline between two calls" : "") +
       ". Otherwise answer in plain text.";
  return s;
}

}  // namespace nbits::serve
