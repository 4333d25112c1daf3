#include "cli/common.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "base/error.h"

namespace nbits::cli {

namespace {

std::vector<std::string> split_names(const std::string& names) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= names.size()) {
    size_t comma = names.find(',', start);
    if (comma == std::string::npos) comma = names.size();
    if (comma > start) out.push_back(names.substr(start, comma - start));
    start = comma + 1;
  }
  NBITS_ASSERT(!out.empty());
  return out;
}

std::optional<int64_t> parse_i64(const std::string& v) {
  if (v.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (errno != 0 || end != v.c_str() + v.size()) return std::nullopt;
  return static_cast<int64_t>(x);
}

std::optional<double> parse_f64(const std::string& v) {
  if (v.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (errno != 0 || end != v.c_str() + v.size() || !std::isfinite(x)) return std::nullopt;
  return x;
}

std::string fmt_num(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

}  // namespace

std::optional<std::vector<int64_t>> parse_int_list(const std::string& text) {
  std::vector<int64_t> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    auto v = parse_i64(text.substr(start, comma - start));
    if (!v) return std::nullopt;
    out.push_back(*v);
    start = comma + 1;
  }
  return out;
}

std::string json_int_list(const std::vector<int32_t>& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out.push_back(',');
    out.append(std::to_string(ids[i]));
  }
  out.push_back(']');
  return out;
}

std::string json_quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

Flags::Flags(std::string command, std::string synopsis, std::string description)
    : command_(std::move(command)), synopsis_(std::move(synopsis)), description_(std::move(description)) {}

Flags::Spec& Flags::add(const std::string& names, Kind kind, const std::string& metavar,
                        const std::string& help) {
  Spec s;
  s.names = split_names(names);
  s.kind = kind;
  s.metavar = metavar;
  s.help = help;
  specs_.push_back(std::move(s));
  return specs_.back();
}

void Flags::str(const std::string& names, const std::string& metavar, const std::string& help, bool required,
                const std::string& def) {
  Spec& s = add(names, Kind::kStr, metavar, help);
  s.required = required;
  if (!def.empty()) s.value = def;
}

void Flags::choice(const std::string& names, const std::vector<std::string>& choices, const std::string& help,
                   const std::string& def) {
  std::string meta;
  for (const auto& c : choices) meta += (meta.empty() ? "" : "|") + c;
  Spec& s = add(names, Kind::kChoice, meta, help);
  s.choices = choices;
  s.value = def;
}

void Flags::i64(const std::string& names, const std::string& metavar, const std::string& help,
                std::optional<int64_t> def, int64_t min, int64_t max) {
  Spec& s = add(names, Kind::kI64, metavar, help);
  s.imin = min;
  s.imax = max;
  if (def) {
    s.value = std::to_string(*def);
    s.ival = *def;
  }
}

void Flags::f64(const std::string& names, const std::string& metavar, const std::string& help,
                std::optional<double> def, double min, double max) {
  Spec& s = add(names, Kind::kF64, metavar, help);
  s.fmin = min;
  s.fmax = max;
  if (def) {
    s.value = fmt_num(*def);
    s.fval = *def;
  }
}

void Flags::ints(const std::string& names, const std::string& metavar, const std::string& help) {
  add(names, Kind::kInts, metavar, help);
}

void Flags::flag(const std::string& names, const std::string& help) { add(names, Kind::kFlag, "", help); }

void Flags::positional(const std::string& metavar, const std::string& help, bool required) {
  positional_specs_.emplace_back(metavar, help);
  positional_required_.push_back(required);
}

Flags::Spec* Flags::find(const std::string& name) {
  for (auto& s : specs_)
    for (const auto& n : s.names)
      if (n == name) return &s;
  return nullptr;
}

const Flags::Spec& Flags::spec(const std::string& name) const {
  Spec* s = const_cast<Flags*>(this)->find(name);
  NBITS_ASSERT(s != nullptr);
  return *s;
}

std::optional<std::string> Flags::check_value(Spec& s, const std::string& name, const std::string& v) {
  switch (s.kind) {
    case Kind::kStr:
    case Kind::kFlag:
      break;
    case Kind::kChoice: {
      bool ok = false;
      for (const auto& c : s.choices) ok |= c == v;
      if (!ok) return name + " must be one of " + s.metavar + " (got '" + v + "')";
      break;
    }
    case Kind::kI64: {
      auto x = parse_i64(v);
      if (!x) return name + " needs an integer (got '" + v + "')";
      if (*x < s.imin || *x > s.imax) {
        std::string range = s.imax == std::numeric_limits<int64_t>::max()
                                ? ">= " + std::to_string(s.imin)
                                : "in [" + std::to_string(s.imin) + ", " + std::to_string(s.imax) + "]";
        return name + " must be " + range + " (got " + v + ")";
      }
      s.ival = *x;
      break;
    }
    case Kind::kF64: {
      auto x = parse_f64(v);
      if (!x) return name + " needs a number (got '" + v + "')";
      if (*x < s.fmin || *x > s.fmax) {
        std::string range = std::isinf(s.fmax) ? ">= " + fmt_num(s.fmin)
                                               : "in [" + fmt_num(s.fmin) + ", " + fmt_num(s.fmax) + "]";
        return name + " must be " + range + " (got " + v + ")";
      }
      s.fval = *x;
      break;
    }
    case Kind::kInts: {
      auto x = parse_int_list(v);
      if (!x) return name + " needs a comma-separated list of integers (got '" + v + "')";
      s.ivals = *x;
      break;
    }
  }
  s.value = v;
  s.given = true;
  return std::nullopt;
}

std::optional<int> Flags::parse(const std::vector<std::string>& args) {
  bool only_positional = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (!only_positional && (a == "-h" || a == "--help")) {
      std::fputs(help().c_str(), stdout);
      return 0;
    }
    if (!only_positional && a == "--") {
      only_positional = true;
      continue;
    }
    if (only_positional || a.size() < 2 || a[0] != '-' || (a[1] >= '0' && a[1] <= '9')) {
      if (positional_values_.size() >= positional_specs_.size())
        return usage_error("unexpected argument '" + a + "'");
      positional_values_.push_back(a);
      continue;
    }
    std::string name = a;
    std::optional<std::string> inline_value;
    if (size_t eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = a.substr(0, eq);
      inline_value = a.substr(eq + 1);
    }
    Spec* s = find(name);
    if (s == nullptr) return usage_error("unknown flag '" + name + "'");
    if (s->kind == Kind::kFlag) {
      if (inline_value) return usage_error(name + " takes no value");
      s->given = true;
      s->value = std::string(1, '1');
      continue;
    }
    std::string v;
    if (inline_value) {
      v = *inline_value;
    } else {
      if (i + 1 >= args.size()) return usage_error(name + " needs a value (" + s->metavar + ")");
      v = args[++i];
    }
    if (auto err = check_value(*s, name, v)) return usage_error(*err);
  }
  for (const auto& s : specs_)
    if (s.required && !s.given) return usage_error("missing required flag " + s.names.back());
  for (size_t i = 0; i < positional_specs_.size(); ++i)
    if (positional_required_[i] && i >= positional_values_.size())
      return usage_error("missing argument " + positional_specs_[i].first);
  return std::nullopt;
}

bool Flags::has(const std::string& name) const { return spec(name).value.has_value(); }
std::string Flags::get_str(const std::string& name) const { return spec(name).value.value_or(""); }
int64_t Flags::get_i64(const std::string& name) const { return spec(name).ival; }
double Flags::get_f64(const std::string& name) const { return spec(name).fval; }
bool Flags::get_flag(const std::string& name) const { return spec(name).given; }
bool Flags::given(const std::string& name) const { return spec(name).given; }
std::vector<int64_t> Flags::get_ints(const std::string& name) const { return spec(name).ivals; }
std::string Flags::get_positional(size_t i) const {
  return i < positional_values_.size() ? positional_values_[i] : "";
}

std::string Flags::help() const {
  if (!help_text_.empty()) return help_text_;
  std::string out = "usage: nbits " + command_ + " " + synopsis_ + "\n\n" + description_ + "\n";
  if (!positional_specs_.empty()) {
    out += "\narguments:\n";
    for (const auto& [meta, h] : positional_specs_) {
      char line[512];
      std::snprintf(line, sizeof line, "  %-26s %s\n", meta.c_str(), h.c_str());
      out += line;
    }
  }
  out += "\noptions:\n";
  for (const auto& s : specs_) {
    std::string left;
    for (const auto& n : s.names) left += (left.empty() ? "" : ", ") + n;
    if (!s.metavar.empty()) left += " " + s.metavar;
    std::string right = s.help;
    if (s.required)
      right += " (required)";
    else if (s.value && s.kind != Kind::kFlag)
      right += " (default: " + *s.value + ")";
    char line[1024];
    std::snprintf(line, sizeof line, "  %-26s %s\n", left.c_str(), right.c_str());
    out += line;
  }
  out += "  -h, --help                 show this help\n";
  return out;
}

int Flags::usage_error(const std::string& message) const {
  std::fprintf(stderr, "nbits %s: %s (see nbits %s --help)\n", command_.c_str(), message.c_str(),
               command_.c_str());
  return 2;
}

// Names come from the file: bytes that are not printable UTF-8 are shown as \xNN.
std::string printable(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size() && (len > 1 || (c >= 0x20 && c != 0x7f));
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
      ++i;
    }
  }
  return out;
}

}  // namespace nbits::cli
