// Jinja values: conversion from JSON, truthiness, printing (str/repr/tojson), equality.
#include "tokenizer/jinja_value.h"

#include <cmath>
#include <cstdio>

#include "base/error.h"

namespace nbits::jinja {

Value Value::from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return none();
    case nlohmann::ordered_json::value_t::boolean:
      return boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
    case nlohmann::ordered_json::value_t::number_unsigned:
      return integer(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_float:
      return number(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      Array a;
      for (const auto& e : j) a.push_back(from_json(e));
      return array(std::move(a));
    }
    case nlohmann::ordered_json::value_t::object: {
      Object o;
      for (auto it = j.begin(); it != j.end(); ++it) o.emplace_back(it.key(), from_json(it.value()));
      return object(std::move(o));
    }
    default:
      return Value();
  }
}

bool Value::truthy() const {
  switch (kind) {
    case kUndefined:
    case kNone:
      return false;
    case kBool:
      return b;
    case kInt:
      return i != 0;
    case kFloat:
      return f != 0;
    case kString:
      return !s.empty();
    case kArray:
      return !a->empty();
    case kObject:
      return !o->empty();
    case kFunction:
      return true;
  }
  return false;
}

Value* Value::find(const std::string& key) const {
  if (kind != kObject) return nullptr;
  for (auto& [k, v] : *o)
    if (k == key) return &v;
  return nullptr;
}

Value Value::get(const std::string& key) const {
  const Value* v = find(key);
  return v ? *v : Value();
}

void Value::set(const std::string& key, Value v) {
  if (Value* e = find(key)) {
    *e = std::move(v);
    return;
  }
  o->emplace_back(key, std::move(v));
}

const char* Value::type_name() const {
  static const char* names[] = {"undefined", "none", "bool", "int",     "float",
                                "string",    "list", "dict", "function"};
  return names[kind];
}

static std::string float_str(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  char buf[64];
  for (int prec = 1; prec <= 17; ++prec) {  // shortest round-trip, like Python's repr
    std::snprintf(buf, sizeof buf, "%.*g", prec, f);
    if (std::strtod(buf, nullptr) == f) break;
  }
  std::string r = buf;
  if (r.find_first_of(".en") == std::string::npos) r.append(".0");
  return r;
}

static std::string quote_py(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos, has_double = s.find('"') != std::string::npos;
  char q = has_single && !has_double ? '"' : '\'';
  std::string r(1, q);
  for (char c : s) {
    if (c == q || c == '\\')
      r += '\\', r += c;
    else if (c == '\n')
      r += "\\n";
    else if (c == '\r')
      r += "\\r";
    else if (c == '\t')
      r += "\\t";
    else
      r += c;
  }
  return r + q;
}

std::string Value::str() const {
  switch (kind) {
    case kUndefined:
      return "";
    case kString:
      return s;
    default:
      return repr();
  }
}

std::string Value::repr() const {
  switch (kind) {
    case kUndefined:
      return "";
    case kNone:
      return "None";
    case kBool:
      return b ? "True" : "False";
    case kInt:
      return std::to_string(i);
    case kFloat:
      return float_str(f);
    case kString:
      return quote_py(s);
    case kArray: {
      std::string r = "[";
      for (size_t k = 0; k < a->size(); ++k) {
        if (k) r += ", ";
        r += (*a)[k].repr();
      }
      return r + "]";
    }
    case kObject: {
      std::string r = "{";
      for (size_t k = 0; k < o->size(); ++k) {
        if (k) r += ", ";
        r += key_value((*o)[k].first).repr();
        r += ": ";
        r += (*o)[k].second.repr();
      }
      return r + "}";
    }
    case kFunction:
      return "<function>";
  }
  return "";
}

static std::string json_string(const std::string& s) {
  std::string r = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        r += "\\\"";
        break;
      case '\\':
        r += "\\\\";
        break;
      case '\n':
        r += "\\n";
        break;
      case '\r':
        r += "\\r";
        break;
      case '\t':
        r += "\\t";
        break;
      case '\b':
        r += "\\b";
        break;
      case '\f':
        r += "\\f";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          r += buf;
        } else {
          r += static_cast<char>(c);
        }
    }
  }
  return r + "\"";
}

std::string Value::to_json(int indent, int depth) const {
  auto nl = [&](int d) {
    std::string r;
    if (indent >= 0) {
      r.push_back('\n');
      r.append(static_cast<size_t>(indent) * static_cast<size_t>(d), ' ');
    }
    return r;
  };
  const char* sep = indent < 0 ? ", " : ",";
  switch (kind) {
    case kUndefined:
    case kNone:
      return "null";
    case kBool:
      return b ? "true" : "false";
    case kInt:
      return std::to_string(i);
    case kFloat:
      return std::isfinite(f) ? float_str(f) : (std::isnan(f) ? "NaN" : f > 0 ? "Infinity" : "-Infinity");
    case kString:
      return json_string(s);
    case kArray: {
      if (a->empty()) return "[]";
      std::string r = "[";
      for (size_t k = 0; k < a->size(); ++k) {
        if (k) r += sep;
        r += nl(depth + 1);
        r += (*a)[k].to_json(indent, depth + 1);
      }
      return r + nl(depth) + "]";
    }
    case kObject: {
      if (o->empty()) return "{}";
      std::string r = "{";
      for (size_t k = 0; k < o->size(); ++k) {
        if (k) r += sep;
        r += nl(depth + 1);
        r += json_string(key_text((*o)[k].first));
        r += ": ";
        r += (*o)[k].second.to_json(indent, depth + 1);
      }
      return r + nl(depth) + "}";
    }
    case kFunction:
      fail("chat template: tojson of a function");
  }
  return "";
}

namespace {
constexpr char kIntKey = '\x01';
}

std::string dict_key(const Value& key) {
  if (key.kind == Value::kInt) return kIntKey + std::to_string(key.i);
  return key.kind == Value::kString ? key.s : key.str();
}

Value key_value(const std::string& stored) {
  if (!stored.empty() && stored[0] == kIntKey) return Value::integer(std::stoll(stored.substr(1)));
  return Value::string(stored);
}

std::string key_text(const std::string& stored) {
  return !stored.empty() && stored[0] == kIntKey ? stored.substr(1) : stored;
}

bool equal(const Value& a, const Value& b) {
  bool an = a.kind == Value::kInt || a.kind == Value::kFloat || a.kind == Value::kBool;
  bool bn = b.kind == Value::kInt || b.kind == Value::kFloat || b.kind == Value::kBool;
  if (an && bn) {
    auto num = [](const Value& v) {
      return v.kind == Value::kFloat ? v.f : v.kind == Value::kInt ? double(v.i) : double(v.b);
    };
    return num(a) == num(b);
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::kUndefined:
    case Value::kNone:
      return true;
    case Value::kString:
      return a.s == b.s;
    case Value::kArray:
      if (a.a->size() != b.a->size()) return false;
      for (size_t k = 0; k < a.a->size(); ++k)
        if (!equal((*a.a)[k], (*b.a)[k])) return false;
      return true;
    case Value::kObject:
      if (a.o->size() != b.o->size()) return false;
      for (const auto& [k, v] : *a.o) {
        const Value* w = b.find(k);
        if (!w || !equal(v, *w)) return false;
      }
      return true;
    default:
      return a.fn == b.fn;
  }
}

}  // namespace nbits::jinja
