// The Lark grammars of tool calls (serve/tool_calls.h, tool_call_grammar): what llguidance holds a
// reply to when a request has tools. Every format with an opening marker is written as the first
// call's marker and then `tail` (the rest of that call and any further ones): a required call is
// `start: MARKER tail`; auto is free text that never spells the marker, or text up to the first
// marker and then `tail`, so the model may answer in words, but a call it starts is well formed.
#include <cctype>
#include <functional>
#include <string>

#include "serve/tool_call_deepseek.h"
#include "serve/tool_call_xml.h"
#include "serve/tool_calls.h"

namespace nbits::serve {
namespace {

using ojson = nlohmann::ordered_json;
using Mark = std::function<std::string(std::string_view)>;

// {"name": const, args_key: parameters} for each allowed function.
ojson call_schema(const ToolRequest& t, const char* args_key = "arguments") {
  ojson any = ojson::array();
  for (const auto& [name, params] : allowed_functions(t)) {
    any.push_back({{"type", "object"},
                   {"properties", {{"name", {{"const", name}}}, {args_key, params}}},
                   {"required", {"name", args_key}},
                   {"additionalProperties", false}});
  }
  ojson s = any.size() == 1 ? any[0] : ojson{{"anyOf", any}};
  s["x-guidance"] = {{"whitespace_pattern", kToolCallWhitespace}};
  return s;
}

// gpt-oss: an optional analysis message, then one call; each function has its own header, so its
// arguments follow its own schema. The call ends with <|call|> (an end-of-generation token that
// llguidance takes as the grammar's lexeme while the grammar is not complete). With `auto` the
// model may instead answer on the final channel (its text ends at <|return|>, an end-of-generation
// token the complete grammar allows), or say a commentary preamble before its call.
std::string harmony_grammar(const ToolRequest& t, bool may_answer, const Mark& mark) {
  const std::string ch = mark("<|channel|>"), msg = mark("<|message|>"), end = mark("<|end|>");
  const std::string next = " " + end + " " + mark("<|start|>") + " \"assistant\"\n";
  // A message's text ends at <|end|>: a special token ends a greedy text lexeme; a marker spelled
  // as text needs the lazy form (suffix=) to end it.
  const bool special_end = end.rfind("<[", 0) == 0;
  const std::string text = special_end ? "/(.|\\n)+/" : "message_text";
  std::string g = may_answer ? "start: analysis? (preamble? call | final)\n" : "start: analysis? call\n";
  g += "analysis: " + ch + " \"analysis\" " + msg + " " + text + next;
  if (may_answer) {
    g += "preamble: " + ch + " \"commentary\" " + msg + " " + text + next;
    g += "final: " + ch + " \"final\" " + msg + " FINAL_TEXT\nFINAL_TEXT: /(?s:.+)/\n";
  }
  if (!special_end) g += "message_text[suffix=" + end + "]: /(?s:.+)/\n";
  return g + call_alternatives(t, [&](const std::string& name, const std::string& args) {
           return ch + " " + ojson("commentary to=functions." + name + " ").dump() + " " +
                  mark("<|constrain|>") + " \"json\" " + msg + " " + args + " " + mark("<|call|>");
         });
}

// A format's calls after the first call's opening marker `open`: the rules define `tail`.
struct MarkedCalls {
  std::string_view open;
  std::string rules;
};

MarkedCalls marked_calls(const ToolRequest& t, ToolFormat f, const Mark& mark) {
  if (f == ToolFormat::kDeepSeekR1 || f == ToolFormat::kDeepSeekV31)  // one block holds the calls
    return {kDeepSeekCallsBegin, deepseek_tool_rules(t, f == ToolFormat::kDeepSeekR1, mark)};
  const ToolMarkers mk = tool_markers(f);
  const std::string open = mark(mk.open);
  // The rest of one call; further calls repeat it after a newline and their own marker.
  auto repeat = [&](const std::string& rest) {
    return "tail: " + rest + (t.parallel ? " (\"\\n\" " + open + " " + rest + ")*" : std::string()) + "\n";
  };
  if (f == ToolFormat::kXmlFunction || f == ToolFormat::kSeedXmlFunction)
    return {mk.open, repeat("\"\\n\" call \"\\n\" " + mark(mk.close)) +
                         xml_function_call_rules(t, f == ToolFormat::kSeedXmlFunction)};
  if (f == ToolFormat::kHermes)
    return {mk.open,
            repeat("\"\\n\" body \"\\n</tool_call>\"") + "body: %json " + call_schema(t).dump() + "\n"};
  if (f == ToolFormat::kLlama3)  // <|python_tag|> and the JSON form, one call
    return {mk.open, "tail: body\nbody: %json " + call_schema(t, "parameters").dump() + "\n"};
  // kMistral, kToolCallTag: the marker, then an array of calls.
  ojson list = {{"type", "array"}, {"items", call_schema(t)}, {"minItems", 1}};
  if (!t.parallel) list["maxItems"] = 1;
  list["items"].erase("x-guidance");
  list["x-guidance"] = {{"whitespace_pattern", kToolCallWhitespace}};
  return {mk.open, "tail: body\nbody: %json " + list.dump() + "\n"};
}

// The call of kLlama3 / kGeneric as a bare JSON reply: `body`.
std::string json_call_rules(const ToolRequest& t, ToolFormat f) {
  if (f == ToolFormat::kLlama3) return "body: %json " + call_schema(t, "parameters").dump() + "\n";
  ojson calls = {{"type", "array"}, {"items", call_schema(t)}, {"minItems", 1}};
  if (!t.parallel) calls["maxItems"] = 1;
  calls["items"].erase("x-guidance");
  const ojson s = {{"type", "object"},
                   {"properties", {{"tool_calls", calls}}},
                   {"required", {"tool_calls"}},
                   {"additionalProperties", false},
                   {"x-guidance", {{"whitespace_pattern", kToolCallWhitespace}}}};
  return "body: %json " + s.dump() + "\n";
}

// A literal text as a Lark regex's body: ASCII punctuation escaped as \x{..}, so that neither the
// regex nor the Lark lexer reads it.
std::string regex_literal(std::string_view text) {
  static const char* hex = "0123456789ABCDEF";
  std::string r;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x80 && !std::isalnum(u) && c != '_') {
      r += "\\x{";
      r += hex[u >> 4];
      r += hex[u & 15];
      r += '}';
    } else {
      r += c;
    }
  }
  return r;
}

bool special(const std::string& lark) { return lark.rfind("<[", 0) == 0; }

// tool_choice auto: TEXT? | <text, then the first marker> tail [| a bare JSON call]. A bare-JSON
// reply opens with `{` (after blanks), which text may not: the text lexeme must be dead by the
// byte after `{`, since the lexer, greedy, would read the object's blanks into it.
std::string auto_grammar(const ToolRequest& t, ToolFormat f, const Mark& mark) {
  const bool json_reply = f == ToolFormat::kLlama3 || f == ToolFormat::kGeneric;
  // Text before a marker: anything, or (bare-JSON formats) anything that does not open with `{`.
  const std::string before = json_reply ? "[ \\t\\r\\n]*([^{ \\t\\r\\n](?s:.*))?" : "(?s:.*)";
  std::string text = "TEXT: /(?s:.+)/", start = "start: TEXT?", rules;
  if (f != ToolFormat::kGeneric) {
    const MarkedCalls m = marked_calls(t, f, mark);
    const std::string open = mark(m.open), lit = regex_literal(m.open);
    text += " & ~/(?s:.*)" + lit + "(?s:.*)/";
    // A marker that is one special token ends the greedy text; one spelled as text would be read
    // into it, so the text before it is a lazy lexeme that ends with the marker's first spelling.
    if (special(open)) {
      start += " | TEXT? " + open + " tail";
    } else {
      start += " | text_then_marker tail";
      rules += "text_then_marker[lazy]: /" + before + lit + "/\n";
    }
    rules += m.rules;
  }
  if (json_reply) {
    text += " & ~/[ \\t\\r\\n]*\\{(?s:.*)/";
    start += " | SPACE? body";
    rules += "SPACE: /[ \\t\\r\\n]+/\n";
    if (f == ToolFormat::kGeneric) rules += json_call_rules(t, f);
  }
  return start + "\n" + text + "\n" + rules;
}

}  // namespace

std::string call_alternatives(
    const ToolRequest& t,
    const std::function<std::string(const std::string& name, const std::string& args)>& body) {
  std::string call = "call:", rules;
  int n = 0;
  for (auto [name, params] : allowed_functions(t)) {
    params["x-guidance"] = {{"whitespace_pattern", kToolCallWhitespace}};
    const std::string id = std::to_string(n++);
    call += (n > 1 ? " | call_" : " call_") + id;
    rules +=
        "call_" + id + ": " + body(name, "args_" + id) + "\nargs_" + id + ": %json " + params.dump() + "\n";
  }
  return call + "\n" + rules;
}

std::string tool_call_grammar(const ToolRequest& t, ToolFormat f, const LarkMarker& marker) {
  const Mark mark = [&](std::string_view m) { return marker ? marker(m) : ojson(std::string(m)).dump(); };
  switch (t.choice) {
    case ToolRequest::Choice::kNone:
      return "";
    case ToolRequest::Choice::kAuto:
      return f == ToolFormat::kHarmony ? harmony_grammar(t, true, mark) : auto_grammar(t, f, mark);
    case ToolRequest::Choice::kRequired:
    case ToolRequest::Choice::kNamed:
      break;
  }
  if (f == ToolFormat::kHarmony) return harmony_grammar(t, false, mark);
  if (f == ToolFormat::kLlama3 || f == ToolFormat::kGeneric)  // the bare JSON form
    return "start: body\n" + json_call_rules(t, f);
  const MarkedCalls m = marked_calls(t, f, mark);
  return "start: " + mark(m.open) + " tail\n" + m.rules;
}

}  // namespace nbits::serve
