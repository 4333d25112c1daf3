// Values of the Jinja subset (internal to jinja.cc and its helpers).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace nbits::jinja {

struct Value;
using Array = std::vector<Value>;
using Object = std::vector<std::pair<std::string, Value>>;  // insertion-ordered, like a Python dict
struct Args;
using Function = std::function<Value(Args&)>;

struct Value {
  enum Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kArray, kObject, kFunction } kind = kUndefined;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::shared_ptr<Array> a;
  std::shared_ptr<Object> o;
  std::shared_ptr<Function> fn;

  static Value none() { return make(kNone); }
  static Value boolean(bool v) {
    Value r = make(kBool);
    r.b = v;
    return r;
  }
  static Value integer(int64_t v) {
    Value r = make(kInt);
    r.i = v;
    return r;
  }
  static Value number(double v) {
    Value r = make(kFloat);
    r.f = v;
    return r;
  }
  static Value string(std::string v) {
    Value r = make(kString);
    r.s = std::move(v);
    return r;
  }
  static Value array(Array v = {}) {
    Value r = make(kArray);
    r.a = std::make_shared<Array>(std::move(v));
    return r;
  }
  static Value object(Object v = {}) {
    Value r = make(kObject);
    r.o = std::make_shared<Object>(std::move(v));
    return r;
  }
  static Value function(Function f) {
    Value r = make(kFunction);
    r.fn = std::make_shared<Function>(std::move(f));
    return r;
  }
  static Value from_json(const nlohmann::ordered_json& j);  // objects keep their key order
  static Value make(Kind k) {
    Value r;
    r.kind = k;
    return r;
  }

  bool defined() const { return kind != kUndefined; }
  bool truthy() const;
  // Member of an object (undefined if absent or not an object).
  Value get(const std::string& key) const;
  Value* find(const std::string& key) const;
  void set(const std::string& key, Value v);
  // Python str() of the value, as Jinja prints it.
  std::string str() const;
  // Python repr(), used inside lists and dicts.
  std::string repr() const;
  // json.dumps(value, ensure_ascii=False[, indent]) as transformers' tojson filter.
  std::string to_json(int indent = -1, int depth = 0) const;
  const char* type_name() const;
};

bool equal(const Value& a, const Value& b);

// Dict keys as an Object stores them: a string as it is, an integer (Python dicts take them:
// Seed-OSS's template has {0: 0, 512: 128, ...} | dictsort) as "\x01" + its decimal digits, so that
// 512 and "512" stay two keys and a dict gives its integer keys back as integers; any other value
// by its str().
std::string dict_key(const Value& key);
// The key as a value (the integer for a stored integer key).
Value key_value(const std::string& stored);
// The key's text: what str() and json.dumps write for it.
std::string key_text(const std::string& stored);

// Call arguments: positional then keyword.
struct Args {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  const Value* kwarg(const std::string& name) const {
    for (const auto& [k, v] : kw)
      if (k == name) return &v;
    return nullptr;
  }
  // Positional argument i, else keyword name, else dflt.
  Value arg(size_t i, const std::string& name, Value dflt = Value()) const {
    if (i < pos.size()) return pos[i];
    if (const Value* v = kwarg(name)) return *v;
    return dflt;
  }
};

}  // namespace nbits::jinja
