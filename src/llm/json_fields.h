// Typed reads of one JSON object's fields for the config parsers (genai_config.cc,
// hf_config.cc): errors name the field path and the file.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"

namespace nbits::llm {

// Reads typed fields of one JSON object; errors name the field path and the file.
class Fields {
  using json = nlohmann::json;

 public:
  Fields(const json& obj, std::string prefix, const std::string& path)
      : obj_(obj), prefix_(std::move(prefix)), path_(path) {}

  const json* find(const char* key) const {
    auto it = obj_.find(key);
    return it == obj_.end() || it->is_null() ? nullptr : &*it;
  }
  std::string name(const char* key) const { return prefix_.empty() ? key : prefix_ + "." + key; }

  [[noreturn]] void bad(const char* key, const char* want, const json& got) const {
    fail(path_, ": field '", name(key), "' must be ", want, " (got ", got.type_name(), ")");
  }
  [[noreturn]] void missing(const char* key) const {
    fail(path_, ": missing required field '", name(key), "'");
  }

  std::optional<int64_t> opt_int(const char* key) const {
    const json* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number_integer()) bad(key, "an integer", *v);
    return v->get<int64_t>();
  }
  int64_t req_int(const char* key, int64_t min_value) const {
    auto v = opt_int(key);
    if (!v) missing(key);
    if (*v < min_value) fail(path_, ": field '", name(key), "' must be >= ", min_value, " (got ", *v, ")");
    return *v;
  }
  int64_t int_or(const char* key, int64_t def) const { return opt_int(key).value_or(def); }
  double num_or(const char* key, double def) const {
    const json* v = find(key);
    if (v == nullptr) return def;
    if (!v->is_number()) bad(key, "a number", *v);
    return v->get<double>();
  }
  bool bool_or(const char* key, bool def) const {
    const json* v = find(key);
    if (v == nullptr) return def;
    if (!v->is_boolean()) bad(key, "true or false", *v);
    return v->get<bool>();
  }
  std::string str_or(const char* key, const std::string& def) const {
    const json* v = find(key);
    if (v == nullptr) return def;
    if (!v->is_string()) bad(key, "a string", *v);
    return v->get<std::string>();
  }
  // An object member (nullptr when absent).
  const json* object(const char* key, bool required) const {
    const json* v = find(key);
    if (v == nullptr) {
      if (required) missing(key);
      return nullptr;
    }
    if (!v->is_object()) bad(key, "an object", *v);
    return v;
  }
  // An integer or a list of integers.
  std::vector<int64_t> int_list(const char* key, bool required) const {
    const json* v = find(key);
    if (v == nullptr) {
      if (required) missing(key);
      return {};
    }
    std::vector<int64_t> out;
    if (v->is_number_integer()) {
      out.push_back(v->get<int64_t>());
    } else if (v->is_array()) {
      for (const json& e : *v) {
        if (!e.is_number_integer()) bad(key, "an integer or a list of integers", *v);
        out.push_back(e.get<int64_t>());
      }
    } else {
      bad(key, "an integer or a list of integers", *v);
    }
    if (required && out.empty()) fail(path_, ": field '", name(key), "' is an empty list");
    return out;
  }

 private:
  const json& obj_;
  std::string prefix_;
  const std::string& path_;
};

}  // namespace nbits::llm
