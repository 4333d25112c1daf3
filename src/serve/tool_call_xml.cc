#include "serve/tool_call_xml.h"

#include <algorithm>

#include "base/json_depth.h"
#include "serve/schema_string_regex.h"
#include "serve/tool_calls.h"

namespace nbits::serve {
namespace {

using ojson = nlohmann::ordered_json;

constexpr std::string_view kParamOpen = "<parameter=", kParamClose = "</parameter>",
                           kFnOpen = "<function=", kFnClose = "</function>";

std::string_view skip_blanks(std::string_view s) {
  while (!s.empty() && (s[0] == ' ' || s[0] == '\n' || s[0] == '\r' || s[0] == '\t')) s.remove_prefix(1);
  return s;
}

// The parameters' schemas of the function `name` among tools (null when unknown).
const ojson* parameter_schemas(const ojson& tools, const std::string& name) {
  if (!tools.is_array()) return nullptr;
  for (const ojson& tool : tools) {
    if (!tool.is_object() || !tool.contains("function")) continue;
    const ojson& fn = tool["function"];
    if (!fn.is_object() || fn.value("name", "") != name) continue;
    if (!fn.contains("parameters") || !fn["parameters"].is_object()) return nullptr;
    const ojson& params = fn["parameters"];
    if (!params.contains("properties") || !params["properties"].is_object()) return nullptr;
    return &params["properties"];
  }
  return nullptr;
}

bool is_string_schema(const ojson* s) {
  if (s == nullptr || !s->is_object() || !s->contains("type")) return false;
  const ojson& t = (*s)["type"];
  return t == "string" || (t.is_array() && t.size() == 1 && t[0] == "string");
}

// {"enum": [strings]} with or without "type": "string".
bool is_string_enum(const ojson& s) {
  if (!s.is_object() || !s.contains("enum") || !s["enum"].is_array() || s["enum"].empty()) return false;
  return std::all_of(s["enum"].begin(), s["enum"].end(), [](const ojson& e) { return e.is_string(); });
}

ojson value_of(std::string_view text, const ojson* schema) {
  if (is_string_schema(schema) || (schema != nullptr && is_string_enum(*schema))) return std::string(text);
  if (json_nesting_depth(text, kMaxOrderedJsonDepth) <= kMaxOrderedJsonDepth) {
    ojson v = ojson::parse(text, nullptr, false);
    if (!v.is_discarded()) return v;
  }
  return std::string(text);
}

// A Lark string literal of s.
std::string lit(std::string_view s) { return ojson(std::string(s)).dump(); }

// Concatenation by appends (GCC 12 warns, wrongly, on "literal" + std::string).
template <typename... T>
std::string cat(const T&... parts) {
  std::string out;
  (out.append(parts), ...);
  return out;
}

const std::string kValueEnd = "\n</parameter>\n";

}  // namespace

bool parse_xml_function_call(std::string_view body, const ojson& tools, ToolCall& out) {
  std::string_view s = skip_blanks(body);
  if (s.substr(0, kFnOpen.size()) != kFnOpen) return false;
  s.remove_prefix(kFnOpen.size());
  const size_t gt = s.find('>');
  if (gt == std::string_view::npos || gt == 0) return false;
  const std::string name(s.substr(0, gt));
  if (name.find_first_of("<\n \"") != std::string::npos) return false;
  s.remove_prefix(gt + 1);
  const ojson* schemas = parameter_schemas(tools, name);
  ojson args = ojson::object();
  for (;;) {
    s = skip_blanks(s);
    if (s.substr(0, kFnClose.size()) == kFnClose) {
      s.remove_prefix(kFnClose.size());
      break;
    }
    if (s.substr(0, kParamOpen.size()) != kParamOpen) return false;
    s.remove_prefix(kParamOpen.size());
    const size_t pg = s.find('>');
    if (pg == std::string_view::npos || pg == 0) return false;
    const std::string key(s.substr(0, pg));
    s.remove_prefix(pg + 1);
    // The value ends at "\n</parameter>" as the templates write it, else at "</parameter>".
    size_t end = s.find(std::string_view(kValueEnd).substr(0, kValueEnd.size() - 1));
    end = end != std::string_view::npos ? end + 1 : s.find(kParamClose);
    if (end == std::string_view::npos) return false;
    std::string_view v = s.substr(0, end);
    if (!v.empty() && v.front() == '\n') v.remove_prefix(1);
    if (!v.empty() && v.back() == '\n') v.remove_suffix(1);
    const ojson* schema = schemas != nullptr && schemas->contains(key) ? &(*schemas)[key] : nullptr;
    args[key] = value_of(v, schema);
    s.remove_prefix(end + kParamClose.size());
  }
  if (!skip_blanks(s).empty()) return false;
  out = ToolCall{"", name, args.dump()};
  return true;
}

std::string xml_function_call_rules(const ToolRequest& t, bool compact) {
  // Qwen3-Coder's value sits on lines of its own; Seed-OSS's between the tags.
  const std::string value_end = compact ? "</parameter>\n" : kValueEnd, value_start = compact ? ">" : ">\n";
  std::string call = "call:", rules;
  int f = 0;
  for (const ojson& tool : t.tools) {
    const ojson& fn = tool["function"];
    const std::string name = fn["name"];
    if (t.choice == ToolRequest::Choice::kNamed && name != t.named) continue;
    const ojson params = fn.contains("parameters") ? fn["parameters"] : ojson::object();
    const ojson props = params.contains("properties") && params["properties"].is_object()
                            ? params["properties"]
                            : ojson::object();
    const ojson required =
        params.contains("required") && params["required"].is_array() ? params["required"] : ojson::array();
    auto is_required = [&](const std::string& k) {
      return std::find(required.begin(), required.end(), ojson(k)) != required.end();
    };
    const std::string fid = cat("f", std::to_string(f++));
    call += cat(f > 1 ? " | " : " ", fid);
    std::string seq;
    int p = 0;
    // Required parameters first, in the schema's order; then each optional one, maybe.
    for (const bool want_required : {true, false}) {
      for (const auto& [key, schema] : props.items()) {
        if (is_required(key) != want_required) continue;
        const std::string pid = cat(fid, "_p", std::to_string(p++));
        std::string value;
        if (is_string_enum(schema)) {
          for (const ojson& e : schema["enum"])
            value += cat(value.empty() ? "" : " | ", lit(e.get<std::string>()));
          value = cat("(", value, ") ", lit(value_end));
        } else if (is_string_schema(&schema)) {  // text of its lengths, ended by the closing tag
          auto length = [&](const char* k, int64_t def) {
            return schema.contains(k) && schema[k].is_number_integer() ? schema[k].get<int64_t>() : def;
          };
          const int64_t lo = length("minLength", 0), hi = length("maxLength", -1);
          const std::string most = hi >= 0 ? std::to_string(std::max(hi, lo)) : "";
          rules += cat(pid, "_v[suffix=", lit(value_end), "]: /(?s:.{",
                       std::to_string(std::max<int64_t>(lo, 0)), ",", most, "})/");
          for (const std::string& re : schema_string_regexes(schema)) rules += cat(" & /", re, "/");
          rules += "\n";
          value = cat(pid, "_v");
        } else {
          ojson s = schema;
          s["x-guidance"] = {{"whitespace_pattern", kToolCallWhitespace}};
          rules += cat(pid, "_v: %json ", s.dump(), "\n");
          value = cat(pid, "_v ", lit(value_end));
        }
        rules += cat(pid, ": ", lit(cat(kParamOpen, key, value_start)), " ", value, "\n");
        seq += want_required ? cat(" ", pid) : cat(" [", pid, "]");
      }
    }
    rules += cat(fid, ": ", lit(cat(kFnOpen, name, ">\n")), seq, " ", lit(kFnClose), "\n");
  }
  return cat(call, "\n", rules);
}

}  // namespace nbits::serve
