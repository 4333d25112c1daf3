#include "serve/tool_calls.h"

#include <algorithm>
#include <cctype>
#include <functional>

#include "base/json_depth.h"
#include "serve/tool_call_deepseek.h"
#include "serve/tool_call_xml.h"

namespace nbits::serve {
namespace {

using ojson = nlohmann::ordered_json;

// The markers around a format's calls block: no part of content (DeepSeek's).
std::vector<std::string_view> wrappers(ToolFormat f) {
  if (f == ToolFormat::kDeepSeekR1 || f == ToolFormat::kDeepSeekV31)
    return {kDeepSeekCallsBegin, kDeepSeekCallsEnd};
  return {};
}
void erase_all(std::string& s, std::string_view what) {
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at)) s.erase(at, what.size());
}

bool space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && space(s[b])) ++b;
  while (e > b && space(s[e - 1])) --e;
  return std::string(s.substr(b, e - b));
}

// {"name": ..., "arguments": {...}} (arguments may also come as a JSON string) -> a call.
bool call_from_json(const ojson& j, ToolCall& out) {
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) return false;
  out.name = j["name"];
  const ojson* args = j.contains("arguments")    ? &j["arguments"]
                      : j.contains("parameters") ? &j["parameters"]
                                                 : nullptr;
  if (!args || args->is_null()) {
    out.arguments = "{}";
  } else if (args->is_string()) {
    out.arguments = args->get<std::string>();
  } else {
    out.arguments = args->dump();
  }
  return true;
}

// The calls of one JSON value: a call object, or an array of them.
bool calls_from_json(const ojson& j, std::vector<ToolCall>& out) {
  if (j.is_array()) {
    if (j.empty()) return false;
    for (const ojson& c : j) {
      ToolCall tc;
      if (!call_from_json(c, tc)) return false;
      out.push_back(std::move(tc));
    }
    return true;
  }
  ToolCall tc;
  if (!call_from_json(j, tc)) return false;
  out.push_back(std::move(tc));
  return true;
}

// The body of a marked call: a call object, an array of them, several separated by ';' or
// whitespace, or Mistral's name[ARGS]{...}. Nothing is added unless all of it parses.
bool parse_call_body(std::string_view body, std::vector<ToolCall>& calls) {
  std::string rest = trim(body);
  if (rest.empty() || json_nesting_depth(rest, kMaxOrderedJsonDepth) > kMaxOrderedJsonDepth) return false;
  std::vector<ToolCall> got;
  if (const size_t a = rest.find("[ARGS]"); a != std::string::npos && rest[0] != '{' && rest[0] != '[') {
    const ojson args = ojson::parse(trim(std::string_view(rest).substr(a + 6)), nullptr, false);
    const std::string name = trim(std::string_view(rest).substr(0, a));
    if (args.is_discarded() || name.empty() || name.find_first_of("{}[]\"") != std::string::npos)
      return false;
    calls.push_back(ToolCall{"", name, args.is_string() ? args.get<std::string>() : args.dump()});
    return true;
  }
  while (!rest.empty()) {
    const size_t end = json_first_value_end(rest);
    if (end == 0) return false;
    const ojson one = ojson::parse(rest.substr(0, end), nullptr, false);
    if (one.is_discarded() || !calls_from_json(one, got)) return false;
    rest = trim(std::string_view(rest).substr(end));
    if (!rest.empty() && rest[0] == ';') rest = trim(std::string_view(rest).substr(1));
  }
  if (got.empty()) return false;
  calls.insert(calls.end(), got.begin(), got.end());
  return true;
}

// A reply that is only JSON: {"tool_calls": [...]}, or one or more call objects (one per line or
// back to back) whose names are tools'.
bool parse_json_reply(std::string_view text, const std::vector<std::string>& names,
                      std::vector<ToolCall>& calls) {
  auto known = [&](const ToolCall& c) {
    return std::find(names.begin(), names.end(), c.name) != names.end();
  };
  if (json_nesting_depth(text, kMaxOrderedJsonDepth) > kMaxOrderedJsonDepth) return false;
  const ojson j = ojson::parse(trim(text), nullptr, false);
  std::vector<ToolCall> got;
  if (!j.is_discarded()) {
    if (j.is_object() && j.contains("tool_calls") && j["tool_calls"].is_array()) {
      if (!calls_from_json(j["tool_calls"], got)) return false;
    } else if (!calls_from_json(j, got)) {
      return false;
    }
    for (const ToolCall& tc : got)
      if (!known(tc)) return false;
  } else {  // several objects in a row
    std::string rest = trim(text);
    while (!rest.empty()) {
      const size_t end = json_first_value_end(rest);
      if (end == 0) return false;
      ToolCall tc;
      const ojson one = ojson::parse(rest.substr(0, end), nullptr, false);
      if (one.is_discarded() || !call_from_json(one, tc) || !known(tc)) return false;
      got.push_back(std::move(tc));
      rest = trim(std::string_view(rest).substr(end));
    }
  }
  if (got.empty()) return false;
  calls.insert(calls.end(), got.begin(), got.end());
  return true;
}

// A Markdown code fence around the reply (```json ... ```), taken off.
std::string strip_fence(std::string_view text) {
  std::string t = trim(text);
  if (t.rfind("```", 0) != 0) return t;
  const size_t nl = t.find('\n');
  const size_t end = t.rfind("```");
  if (nl == std::string::npos || end <= nl) return t;
  return trim(std::string_view(t).substr(nl + 1, end - nl - 1));
}

// Length of the longest suffix of s that is a proper prefix of marker.
size_t partial_marker(std::string_view s, std::string_view marker) {
  for (size_t n = std::min(s.size(), marker.size() - 1); n > 0; --n)
    if (s.substr(s.size() - n) == marker.substr(0, n)) return n;
  return 0;
}

}  // namespace

ToolFormat tool_format(const std::string& chat_template) {
  auto has = [&](std::string_view s) { return chat_template.find(s) != std::string::npos; };
  if (has("<|channel|>") && has("<|message|>")) return ToolFormat::kHarmony;
  if (has(kDeepSeekCallBegin)) return has("```json") ? ToolFormat::kDeepSeekR1 : ToolFormat::kDeepSeekV31;
  if (has("<seed:tool_call>")) return ToolFormat::kSeedXmlFunction;
  if (has("<function=") && has("<parameter=") && has("<tool_call>")) return ToolFormat::kXmlFunction;
  if (has("<tool_call>")) return ToolFormat::kHermes;
  if (has("[TOOL_CALLS]")) return ToolFormat::kMistral;
  if (has("<|tool_call|>") || has("<|tool|>")) return ToolFormat::kToolCallTag;
  if (has("<|python_tag|>") || has("a JSON for a function call")) return ToolFormat::kLlama3;
  return ToolFormat::kGeneric;
}

const char* tool_format_name(ToolFormat f) {
  switch (f) {
    case ToolFormat::kHermes:
      return "hermes";
    case ToolFormat::kLlama3:
      return "llama3";
    case ToolFormat::kMistral:
      return "mistral";
    case ToolFormat::kToolCallTag:
      return "tool_call_tag";
    case ToolFormat::kXmlFunction:
      return "xml_function";
    case ToolFormat::kSeedXmlFunction:
      return "seed_xml_function";
    case ToolFormat::kHarmony:
      return "harmony";
    case ToolFormat::kDeepSeekR1:
      return "deepseek_r1";
    case ToolFormat::kDeepSeekV31:
      return "deepseek_v3_1";
    case ToolFormat::kGeneric:
      break;
  }
  return "generic";
}

ToolMarkers tool_markers(ToolFormat f) {
  switch (f) {
    case ToolFormat::kHermes:
    case ToolFormat::kXmlFunction:
      return {"<tool_call>", "</tool_call>"};
    case ToolFormat::kSeedXmlFunction:
      return {"<seed:tool_call>", "</seed:tool_call>"};
    case ToolFormat::kLlama3:
      return {"<|python_tag|>", ""};
    case ToolFormat::kMistral:
      return {"[TOOL_CALLS]", ""};
    case ToolFormat::kToolCallTag:
      return {"<|tool_call|>", "<|/tool_call|>"};
    case ToolFormat::kDeepSeekR1:
    case ToolFormat::kDeepSeekV31:
      return {kDeepSeekCallBegin, kDeepSeekCallEnd};
    case ToolFormat::kHarmony:  // ReplyChannels reads the channels
    case ToolFormat::kGeneric:
      break;
  }
  return {"", ""};
}
std::string generic_tools_prompt(const ToolRequest& t) {
  std::string s = "You can call these functions (JSON schemas of their arguments follow each name):\n";
  for (const ojson& tool : t.tools) {
    const ojson& fn = tool["function"];
    s += "- " + fn["name"].get<std::string>();
    if (fn.contains("description") && fn["description"].is_string())
      s += ": " + fn["description"].get<std::string>();
    s += "\n  arguments: " + (fn.contains("parameters") ? fn["parameters"].dump() : std::string("{}")) + "\n";
  }
  s += "To call functions, answer with only this JSON object:\n"
       "{\"tool_calls\": [{\"name\": \"<function name>\", \"arguments\": {<arguments>}}]}\n"
       "Otherwise answer in plain text.";
  return s;
}

bool template_presents_tools(const std::string& chat_template) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = chat_template.find("tools"); at != std::string::npos;
       at = chat_template.find("tools", at + 1))
    if ((at == 0 || !ident(chat_template[at - 1])) &&
        (at + 5 == chat_template.size() || !ident(chat_template[at + 5])))
      return true;
  return false;
}

std::string tools_prompt(const ToolRequest& t, ToolFormat f) {
  if (f == ToolFormat::kDeepSeekR1 || f == ToolFormat::kDeepSeekV31)
    return deepseek_tools_prompt(t, f == ToolFormat::kDeepSeekR1);
  return generic_tools_prompt(t);
}

std::vector<AllowedFunction> allowed_functions(const ToolRequest& t) {
  std::vector<AllowedFunction> fns;
  for (const ojson& tool : t.tools) {
    const ojson& fn = tool["function"];
    const std::string name = fn["name"];
    if (t.choice == ToolRequest::Choice::kNamed && name != t.named) continue;
    fns.push_back({name, fn.contains("parameters") ? fn["parameters"] : ojson{{"type", "object"}}});
  }
  return fns;
}

std::vector<std::string> tool_names(const ToolRequest& t) {
  std::vector<std::string> names;
  for (const ojson& tool : t.tools) names.push_back(tool["function"]["name"]);
  return names;
}

ParsedReply parse_tool_calls(std::string_view text, ToolFormat f, const std::vector<std::string>& names,
                             const ojson& tools) {
  ParsedReply r;
  ToolCallStream s(f, names, tools);
  r.content = s.push(text, r.calls);
  r.content += s.finish(r.calls);
  if (!r.calls.empty() && trim(r.content).empty()) r.content.clear();
  return r;
}

bool ToolCallStream::body(std::string_view text, std::vector<ToolCall>& calls) const {
  if (f_ == ToolFormat::kXmlFunction || f_ == ToolFormat::kSeedXmlFunction) {  // XML, else (mixed) JSON
    ToolCall c;
    if (parse_xml_function_call(text, tools_, c)) {
      calls.push_back(std::move(c));
      return true;
    }
  }
  if (f_ == ToolFormat::kDeepSeekR1 || f_ == ToolFormat::kDeepSeekV31) {
    ToolCall c;
    if (!parse_deepseek_call(text, c)) return false;
    calls.push_back(std::move(c));
    return true;
  }
  return parse_call_body(text, calls);
}

std::string ToolCallStream::push(std::string_view piece, std::vector<ToolCall>& calls) {
  held_ += piece;
  if (state_ == State::kStart) {
    const size_t b = held_.find_first_not_of(" \n\r\t");
    if (b == std::string::npos) return "";
    const std::string_view head = std::string_view(held_).substr(b), open = tool_markers(f_).open;
    if (head.size() < open.size() && open.substr(0, head.size()) == head) return "";  // maybe the marker
    if (head[0] == '`' && head.size() < 3) return "";  // ``` or a single ` : not known yet
    const bool marker = !open.empty() && head.substr(0, open.size()) == open;
    state_ = !marker && (head[0] == '{' || head[0] == '[' || head.substr(0, 3) == "```") ? State::kJson
                                                                                         : State::kText;
  }
  if (state_ == State::kJson) return "";
  std::string out;
  if (f_ == ToolFormat::kGeneric) {  // text: no marker opens a call
    out = std::move(held_);
    held_.clear();
    return out;
  }
  const ToolMarkers mk = tool_markers(f_);
  for (;;) {
    if (!in_call_) {
      size_t keep_wrap = 0;
      for (std::string_view w : wrappers(f_)) {
        erase_all(held_, w);
        keep_wrap = std::max(keep_wrap, partial_marker(held_, w));
      }
      const size_t open = held_.find(mk.open);
      if (open == std::string::npos) {
        const size_t keep = std::max(keep_wrap, partial_marker(held_, mk.open));
        out += held_.substr(0, held_.size() - keep);
        held_.erase(0, held_.size() - keep);
        return out;
      }
      out += held_.substr(0, open);
      held_.erase(0, open + mk.open.size());
      in_call_ = true;
    }
    // The body ends at the closing marker, or (none) at the next call's opening one.
    const std::string_view end_marker = mk.close.empty() ? mk.open : mk.close;
    const size_t end = held_.find(end_marker);
    if (end == std::string::npos) return out;
    const size_t used = mk.close.empty() ? end : end + mk.close.size();
    if (!body(std::string_view(held_).substr(0, end), calls))
      out += std::string(mk.open) + held_.substr(0, used);  // not a call: text
    held_.erase(0, used);
    in_call_ = false;
  }
}

std::string ToolCallStream::finish(std::vector<ToolCall>& calls) {
  std::string rest = std::move(held_);
  held_.clear();
  for (std::string_view w : wrappers(f_)) erase_all(rest, w);
  if (state_ == State::kJson) {
    state_ = State::kStart;
    if (parse_json_reply(strip_fence(rest), names_, calls)) return "";
    return rest;
  }
  if (in_call_) {
    in_call_ = false;
    // A call that runs to the end, or an unclosed block whose JSON is complete (the reply ended
    // at the eos): calls.
    if (body(rest, calls)) return "";
    return std::string(tool_markers(f_).open) + rest;
  }
  return rest;
}

}  // namespace nbits::serve
