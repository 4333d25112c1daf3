// Minimal flag parsing for the make-model / bench / roofline subcommands:
// "--name value", "--name=value", short aliases, boolean switches. Unknown or
// malformed flags throw nbits::Error naming the flag.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"

namespace nbits::modelgen {

class ArgList {
 public:
  // `valued`: flags that take a value; `switches`: boolean flags. Aliases map
  // short names ("-t") to long ones ("--threads").
  ArgList(const std::vector<std::string>& args, const std::set<std::string>& valued,
          const std::set<std::string>& switches, const std::map<std::string, std::string>& aliases = {}) {
    for (size_t i = 0; i < args.size(); ++i) {
      std::string a = args[i];
      std::optional<std::string> value;
      if (const size_t eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
        value = a.substr(eq + 1);
        a = a.substr(0, eq);
      }
      if (auto it = aliases.find(a); it != aliases.end()) a = it->second;
      if (switches.count(a)) {
        NBITS_CHECK(!value, "flag ", a, " takes no value");
        values_.insert_or_assign(a, std::string(1, '1'));
      } else if (valued.count(a)) {
        if (!value) {
          NBITS_CHECK(i + 1 < args.size(), "flag ", a, " needs a value");
          value = args[++i];
        }
        values_.insert_or_assign(a, *value);
      } else {
        fail("unknown flag '", args[i], "' (see --help)");
      }
    }
  }

  bool has(const std::string& name) const { return values_.count(name) != 0; }
  std::string str(const std::string& name, const std::string& def = "") const {
    auto it = values_.find(name);
    return it == values_.end() ? def : it->second;
  }
  int64_t integer(const std::string& name, int64_t def) const {
    auto it = values_.find(name);
    if (it == values_.end()) return def;
    return parse_int(name, it->second);
  }
  double number(const std::string& name, double def) const {
    auto it = values_.find(name);
    if (it == values_.end()) return def;
    char* end = nullptr;
    const double v = std::strtod(it->second.c_str(), &end);
    NBITS_CHECK(!it->second.empty() && end && *end == '\0', "flag ", name, ": '", it->second,
                "' is not a number");
    return v;
  }
  // Comma-separated integers, e.g. "-t 1,2".
  std::vector<int64_t> integers(const std::string& name, std::vector<int64_t> def) const {
    auto it = values_.find(name);
    if (it == values_.end()) return def;
    std::vector<int64_t> out;
    std::string cur;
    for (char c : it->second + ",") {
      if (c == ',') {
        out.push_back(parse_int(name, cur));
        cur.clear();
      } else {
        cur += c;
      }
    }
    return out;
  }

 private:
  static int64_t parse_int(const std::string& name, const std::string& s) {
    char* end = nullptr;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    NBITS_CHECK(!s.empty() && end && *end == '\0', "flag ", name, ": '", s, "' is not an integer");
    return v;
  }
  std::map<std::string, std::string> values_;
};

}  // namespace nbits::modelgen
