#include "serve/schema_string_regex.h"

#include <map>
#include <string_view>

#include "base/error.h"

namespace nbits::serve {
namespace {

// The formats whose values have a fixed shape (RFC 3339 dates and times, RFC 4122 UUIDs, dotted
// IPv4, a plain address and host name). Others ("uri", "regex", ...) are annotations here, as
// JSON Schema 2020-12 makes every format by default.
const std::map<std::string, std::string, std::less<>>& formats() {
  static const std::string date = "[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])";
  static const std::string time =
      "([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)(\\.[0-9]{1,9})?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])";
  static const std::string label = "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
  static const std::string octet = "(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";
  static const std::map<std::string, std::string, std::less<>> f = {
      {"date", date},
      {"time", time},
      {"date-time", date + "[Tt]" + time},
      {"uuid", "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"},
      {"ipv4", "(" + octet + "\\.){3}" + octet},
      {"email", "[A-Za-z0-9._%+-]{1,64}@" + label + "(\\." + label + ")+"},
      {"hostname", label + "(\\." + label + ")*"},
  };
  return f;
}

// ECMA-262 to llguidance's syntax: \d, \w (and \D, \W) as ASCII classes, '/' escaped for Lark,
// the anchors at the ends taken as the match's ends and, where absent, any text around.
std::string from_pattern(std::string_view p) {
  const std::string_view original = p;
  const bool head = !p.empty() && p.front() == '^';
  if (head) p.remove_prefix(1);
  bool tail = false;
  if (!p.empty() && p.back() == '$') {
    size_t slashes = 0;
    for (size_t i = p.size() - 1; i > 0 && p[i - 1] == '\\'; --i) ++slashes;
    if (slashes % 2 == 0) {
      tail = true;
      p.remove_suffix(1);
    }
  }
  auto refuse = [&](const char* why) {
    fail("a string's \"pattern\" ", std::string(original),
         " cannot be enforced in this tool-call form: ", why);
  };
  std::string out;
  bool in_class = false;
  int depth = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[++i];
      const char* cls = e == 'd' ? "0-9" : e == 'w' ? "0-9A-Za-z_" : nullptr;
      if (cls != nullptr) {
        if (!in_class) out += '[';
        out += cls;
        if (!in_class) out += ']';
      } else if ((e == 'D' || e == 'W') && !in_class) {
        out += e == 'D' ? "[^0-9]" : "[^0-9A-Za-z_]";
      } else if (e >= '1' && e <= '9') {
        refuse("a backreference");
      } else if (e == '/') {
        out += "\\/";
      } else {
        out += '\\';
        out += e;
      }
      continue;
    }
    if (in_class) {
      if (c == ']') in_class = false;
      if (c == '/') out += '\\';
      out += c;
      continue;
    }
    if (c == '[') {
      in_class = true;
      out += c;
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];  // a literal ']' first
      continue;
    }
    if (c == '^' || c == '$') refuse("an anchor inside it");
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    if (c == '|' && depth == 0 && (head || tail)) refuse("anchors around a top-level alternation");
    if (c == '(' && i + 2 < p.size() && p[i + 1] == '?' &&
        (p[i + 2] == '=' || p[i + 2] == '!' || p[i + 2] == '<'))
      refuse("a lookaround");
    if (c == '/') out += '\\';
    out += c;
  }
  std::string r = head ? "(" : "(?s:.*)(";
  r += out;
  r += tail ? ")" : ")(?s:.*)";
  return r;
}

}  // namespace

std::vector<std::string> schema_string_regexes(const nlohmann::ordered_json& schema) {
  std::vector<std::string> r;
  if (!schema.is_object()) return r;
  if (schema.contains("pattern") && schema["pattern"].is_string())
    r.push_back(from_pattern(schema["pattern"].get<std::string>()));
  if (schema.contains("format") && schema["format"].is_string()) {
    const auto f = formats().find(schema["format"].get<std::string>());
    if (f != formats().end()) r.push_back(f->second);
  }
  return r;
}

}  // namespace nbits::serve
