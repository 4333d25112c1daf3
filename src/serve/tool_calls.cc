#include "serve/tool_calls.h"

#include <algorithm>

#include "base/json_depth.h"

namespace nbits::serve {
namespace {

using ojson = nlohmann::ordered_json;

constexpr std::string_view kOpen = "<tool_call>", kClose = "</tool_call>";
// JSON whitespace inside a call, bounded as the guidance room bounds it for schemas.
constexpr const char* kWhitespace = R"(( |\n{1,2}[ \t]{0,20}))";

// {"name": const, "arguments": parameters} for each allowed function.
ojson call_schema(const ToolRequest& t) {
  ojson any = ojson::array();
  for (const ojson& tool : t.tools) {
    const ojson& fn = tool["function"];
    const std::string name = fn["name"];
    if (t.choice == ToolRequest::Choice::kNamed && name != t.named) continue;
    ojson params = fn.contains("parameters") ? fn["parameters"] : ojson{{"type", "object"}};
    any.push_back({{"type", "object"},
                   {"properties", {{"name", {{"const", name}}}, {"arguments", params}}},
                   {"required", {"name", "arguments"}},
                   {"additionalProperties", false}});
  }
  ojson s = any.size() == 1 ? any[0] : ojson{{"anyOf", any}};
  s["x-guidance"] = {{"whitespace_pattern", kWhitespace}};
  return s;
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

// A Hermes block's body: one JSON object.
bool parse_hermes_body(std::string_view body, ToolCall& out) {
  if (json_nesting_depth(body, kMaxOrderedJsonDepth) > kMaxOrderedJsonDepth) return false;
  const ojson j = ojson::parse(trim(body), nullptr, false);
  return !j.is_discarded() && call_from_json(j, out);
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
      for (const ojson& c : j["tool_calls"]) {
        ToolCall tc;
        if (!call_from_json(c, tc) || !known(tc)) return false;
        got.push_back(std::move(tc));
      }
    } else {
      ToolCall tc;
      if (!call_from_json(j, tc) || !known(tc)) return false;
      got.push_back(std::move(tc));
    }
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
  return chat_template.find("<tool_call>") != std::string::npos ? ToolFormat::kHermes : ToolFormat::kGeneric;
}

const char* tool_format_name(ToolFormat f) { return f == ToolFormat::kHermes ? "hermes" : "generic"; }

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

std::string tool_call_grammar(const ToolRequest& t, ToolFormat f) {
  if (t.choice != ToolRequest::Choice::kRequired && t.choice != ToolRequest::Choice::kNamed) return "";
  const std::string call = call_schema(t).dump();
  if (f == ToolFormat::kHermes) {
    return std::string("start: call") + (t.parallel ? " (\"\\n\" call)*" : "") +
           "\ncall: \"<tool_call>\\n\" body \"\\n</tool_call>\"\nbody: %json " + call + "\n";
  }
  ojson calls = {{"type", "array"}, {"items", ojson::parse(call)}, {"minItems", 1}};
  if (!t.parallel) calls["maxItems"] = 1;
  calls["items"].erase("x-guidance");
  const ojson s = {{"type", "object"},
                   {"properties", {{"tool_calls", calls}}},
                   {"required", {"tool_calls"}},
                   {"additionalProperties", false},
                   {"x-guidance", {{"whitespace_pattern", kWhitespace}}}};
  return "start: body\nbody: %json " + s.dump() + "\n";
}

std::vector<std::string> tool_names(const ToolRequest& t) {
  std::vector<std::string> names;
  for (const ojson& tool : t.tools) names.push_back(tool["function"]["name"]);
  return names;
}

ParsedReply parse_tool_calls(std::string_view text, ToolFormat f, const std::vector<std::string>& names) {
  ParsedReply r;
  ToolCallStream s(f, names);
  r.content = s.push(text, r.calls);
  r.content += s.finish(r.calls);
  if (!r.calls.empty() && trim(r.content).empty()) r.content.clear();
  return r;
}

std::string ToolCallStream::push(std::string_view piece, std::vector<ToolCall>& calls) {
  held_ += piece;
  if (state_ == State::kStart) {
    const size_t b = held_.find_first_not_of(" \n\r\t");
    if (b == std::string::npos) return "";
    if (held_[b] == '`' && held_.size() - b < 3) return "";  // ``` or a single ` : not known yet
    state_ = held_[b] == '{' || held_.compare(b, 3, "```") == 0 ? State::kJson : State::kText;
  }
  if (state_ == State::kJson) return "";
  std::string out;
  if (f_ == ToolFormat::kGeneric) {  // text: no marker opens a call
    out = std::move(held_);
    held_.clear();
    return out;
  }
  for (;;) {
    if (!in_call_) {
      const size_t open = held_.find(kOpen);
      if (open == std::string::npos) {
        const size_t keep = partial_marker(held_, kOpen);
        out += held_.substr(0, held_.size() - keep);
        held_.erase(0, held_.size() - keep);
        return out;
      }
      out += held_.substr(0, open);
      held_.erase(0, open + kOpen.size());
      in_call_ = true;
    }
    const size_t close = held_.find(kClose);
    if (close == std::string::npos) return out;
    ToolCall c;
    if (parse_hermes_body(std::string_view(held_).substr(0, close), c))
      calls.push_back(std::move(c));
    else
      out += std::string(kOpen) + held_.substr(0, close + kClose.size());  // not a call: text
    held_.erase(0, close + kClose.size());
    in_call_ = false;
  }
}

std::string ToolCallStream::finish(std::vector<ToolCall>& calls) {
  std::string rest = std::move(held_);
  held_.clear();
  if (state_ == State::kJson) {
    state_ = State::kStart;
    if (parse_json_reply(strip_fence(rest), names_, calls)) return "";
    return rest;
  }
  if (in_call_) {
    in_call_ = false;
    ToolCall c;  // an unclosed block whose JSON is complete (the reply ended at the eos): a call
    if (parse_hermes_body(rest, c)) {
      calls.push_back(std::move(c));
      return "";
    }
    return std::string(kOpen) + rest;
  }
  return rest;
}

}  // namespace nbits::serve
