// The Jinja renderer: walks the syntax tree with the template's variables (filters, tests,
// globals, loops) and writes the text, as transformers' apply_chat_template does.
#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>

#include "base/error.h"
#include "tokenizer/jinja_ast.h"
#include "tokenizer/jinja_lex.h"
#include "tokenizer/unicode.h"

namespace nbits::jinja::detail {
namespace {

// ---------------------------------------------------------------------------------------------
// Evaluator.

enum class Flow { kNormal, kBreak, kContinue };

int64_t to_int(const Value& v, int line, const char* what) {
  if (v.kind == Value::kInt) return v.i;
  if (v.kind == Value::kBool) return v.b;
  if (v.kind == Value::kFloat) return static_cast<int64_t>(v.f);
  error_at(line, std::string(what) + " must be an integer, not " + v.type_name());
}

bool is_num(const Value& v) {
  return v.kind == Value::kInt || v.kind == Value::kFloat || v.kind == Value::kBool;
}
double to_num(const Value& v) {
  return v.kind == Value::kFloat ? v.f : v.kind == Value::kInt ? double(v.i) : double(v.b);
}

std::vector<std::string> utf8_chars(const std::string& s) {
  std::vector<std::string> r;
  for (size_t i = 0; i < s.size();) {
    size_t n = 1;
    while (i + n < s.size() && (static_cast<unsigned char>(s[i + n]) & 0xC0) == 0x80) ++n;
    r.push_back(s.substr(i, n));
    i += n;
  }
  return r;
}

std::string strip_chars(const std::string& s, const std::string& chars, bool left, bool right) {
  size_t b = 0, e = s.size();
  auto in = [&](char c) { return chars.empty() ? is_space(c) : chars.find(c) != std::string::npos; };
  if (left)
    while (b < e && in(s[b])) ++b;
  if (right)
    while (e > b && in(s[e - 1])) --e;
  return s.substr(b, e - b);
}

std::string case_map(const std::string& s, bool upper) {
  std::string r = s;
  for (char& c : r)
    c = static_cast<char>(upper ? std::toupper(static_cast<unsigned char>(c))
                                : std::tolower(static_cast<unsigned char>(c)));
  return r;
}

std::string title_case(const std::string& s, bool only_first) {
  std::string r;
  bool start = true;
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    r += static_cast<char>(start ? std::toupper(u) : (only_first || std::isalpha(u) ? std::tolower(u) : u));
    start = only_first ? false : !std::isalnum(u);
  }
  return r;
}

Array iterate(const Value& v, int line) {
  switch (v.kind) {
    case Value::kArray:
      return *v.a;
    case Value::kObject: {
      Array keys;
      for (const auto& [k, x] : *v.o) keys.push_back(key_value(k));
      return keys;
    }
    case Value::kString: {
      Array chars;
      for (auto& c : utf8_chars(v.s)) chars.push_back(Value::string(c));
      return chars;
    }
    case Value::kUndefined:
      return {};
    default:
      error_at(line, std::string("cannot iterate over ") + v.type_name());
  }
}

class Renderer {
 public:
  Renderer(const nlohmann::ordered_json& ctx, int64_t now_utc) {
    scopes_.emplace_back();
    auto& g = scopes_.back();
    if (ctx.is_object())
      for (auto it = ctx.begin(); it != ctx.end(); ++it) g[it.key()] = Value::from_json(it.value());
    g["raise_exception"] = Value::function(
        [](Args& a) -> Value { fail("chat template raised an exception: ", a.arg(0, "message").str()); });
    g["namespace"] = Value::function([](Args& a) {
      Value ns = Value::object();
      for (auto& [k, v] : a.kw) ns.set(k, v);
      return ns;
    });
    g["range"] = Value::function([](Args& a) {
      int64_t start = 0, stop, step = 1;
      if (a.pos.size() == 1)
        stop = to_int(a.pos[0], 0, "range()");
      else if (a.pos.size() >= 2) {
        start = to_int(a.pos[0], 0, "range()");
        stop = to_int(a.pos[1], 0, "range()");
        if (a.pos.size() > 2) step = to_int(a.pos[2], 0, "range()");
      } else
        fail("chat template: range() needs arguments");
      if (step == 0) fail("chat template: range() step is zero");
      Array r;
      for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
        r.push_back(Value::integer(i));
        if (r.size() > 1000000) fail("chat template: range() too large");
      }
      return Value::array(std::move(r));
    });
    g["strftime_now"] = Value::function([now_utc](Args& a) {
      std::time_t t = now_utc >= 0 ? static_cast<std::time_t>(now_utc) : std::time(nullptr);
      std::tm tm{};
      gmtime_r(&t, &tm);
      char buf[256];
      size_t n = std::strftime(buf, sizeof buf, a.arg(0, "format").str().c_str(), &tm);
      return Value::string(std::string(buf, n));
    });
  }

  Flow exec(const std::vector<Node>& nodes) {
    for (const Node& n : nodes) {
      Flow f = exec(n);
      if (f != Flow::kNormal) return f;
    }
    return Flow::kNormal;
  }

  std::string out;

 private:
  Flow exec(const Node& n) {
    switch (n.kind) {
      case Node::kText:
        out += n.text;
        return Flow::kNormal;
      case Node::kOut:
        out += eval(*n.expr).str();
        return Flow::kNormal;
      case Node::kBreak:
        return Flow::kBreak;
      case Node::kContinue:
        return Flow::kContinue;
      case Node::kIf:
        for (const auto& [cond, body] : n.branches)
          if (!cond || eval(*cond).truthy()) return exec(body);
        return Flow::kNormal;
      case Node::kBlock:
        return exec(n.body);
      case Node::kFilterBlock: {
        Args a;
        for (const auto& x : n.defaults) a.pos.push_back(eval(*x));
        out += filter(n.text, Value::string(capture(n.body)), a, n.line).str();
        return Flow::kNormal;
      }
      case Node::kMacro: {
        const Node* m = &n;
        scopes_.back()[n.text] = Value::function([this, m](Args& a) { return call_macro(*m, a); });
        return Flow::kNormal;
      }
      case Node::kSet: {
        if (!n.expr) {  // {% set x %}...{% endset %}
          scopes_.back()[n.vars[0]] = Value::string(capture(n.body));
          return Flow::kNormal;
        }
        Value v = eval(*n.expr);
        if (n.set_attr) {
          Value target = lookup(n.vars[0]);
          if (target.kind != Value::kObject)
            error_at(n.line, "cannot set attribute of " + n.vars[0] + " (not a namespace)");
          target.set(n.vars[1], v);
        } else if (n.vars.size() == 1) {
          scopes_.back()[n.vars[0]] = v;
        } else {
          Array items = iterate(v, n.line);
          if (items.size() != n.vars.size()) error_at(n.line, "wrong number of values to unpack in set");
          for (size_t k = 0; k < items.size(); ++k) scopes_.back()[n.vars[k]] = items[k];
        }
        return Flow::kNormal;
      }
      case Node::kFor: {
        Value seq = eval(*n.expr);
        Array items;
        if (seq.kind == Value::kObject) {  // iterating a dict gives its keys
          items = iterate(seq, n.line);
        } else {
          items = iterate(seq, n.line);
        }
        scopes_.emplace_back();
        auto bind = [&](const Value& item) {
          if (n.vars.size() == 1) {
            scopes_.back()[n.vars[0]] = item;
            return;
          }
          Array parts = iterate(item, n.line);
          if (parts.size() != n.vars.size()) error_at(n.line, "wrong number of values to unpack in for loop");
          for (size_t k = 0; k < parts.size(); ++k) scopes_.back()[n.vars[k]] = parts[k];
        };
        if (n.filter) {
          Array kept;
          for (const Value& item : items) {
            bind(item);
            if (eval(*n.filter).truthy()) kept.push_back(item);
          }
          items = std::move(kept);
        }
        const int64_t len = static_cast<int64_t>(items.size());
        for (int64_t k = 0; k < len; ++k) {
          bind(items[static_cast<size_t>(k)]);
          Value loop = Value::object();
          loop.set("index0", Value::integer(k));
          loop.set("index", Value::integer(k + 1));
          loop.set("revindex0", Value::integer(len - k - 1));
          loop.set("revindex", Value::integer(len - k));
          loop.set("first", Value::boolean(k == 0));
          loop.set("last", Value::boolean(k == len - 1));
          loop.set("length", Value::integer(len));
          loop.set("previtem", k > 0 ? items[static_cast<size_t>(k - 1)] : Value());
          loop.set("nextitem", k + 1 < len ? items[static_cast<size_t>(k + 1)] : Value());
          scopes_.back()["loop"] = loop;
          if (exec(n.body) == Flow::kBreak) break;
        }
        if (len == 0) exec(n.else_body);
        scopes_.pop_back();
        return Flow::kNormal;
      }
    }
    return Flow::kNormal;
  }

  // The output of `body`, rendered apart from the template's.
  std::string capture(const std::vector<Node>& body) {
    std::string saved = std::move(out);
    out.clear();
    exec(body);
    std::string r = std::move(out);
    out = std::move(saved);
    return r;
  }

  // A macro call, as Jinja2's: parameters from the positional then keyword arguments, else their
  // defaults (else undefined); the body sees the template's top-level names and its parameters,
  // not the caller's locals; the result is the rendered body.
  Value call_macro(const Node& m, Args& a) {
    if (++macro_depth_ > 64) error_at(m.line, "macro '" + m.text + "' nests too deep");
    struct Guard {
      int& d;
      ~Guard() { --d; }
    } guard{macro_depth_};
    if (a.pos.size() > m.vars.size())
      error_at(m.line, "macro '" + m.text + "' takes " + std::to_string(m.vars.size()) + " arguments");
    std::map<std::string, Value> local;
    for (size_t k = 0; k < m.vars.size(); ++k) {
      Value v = a.arg(k, m.vars[k]);
      if (!v.defined() && m.defaults[k]) v = eval(*m.defaults[k]);
      local[m.vars[k]] = std::move(v);
    }
    std::vector<std::map<std::string, Value>> saved = std::move(scopes_);
    scopes_ = {saved.front(), std::move(local)};
    std::string r;
    try {
      r = capture(m.body);
    } catch (...) {
      scopes_ = std::move(saved);
      throw;
    }
    scopes_ = std::move(saved);
    return Value::string(std::move(r));
  }

  Value lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return f->second;
    }
    return Value();
  }

  Value method(const Value& obj, const std::string& name, int line) {
    auto m = [&](auto fn) { return Value::function(fn); };
    if (obj.kind == Value::kString) {
      const std::string s = obj.s;
      if (name == "strip" || name == "lstrip" || name == "rstrip")
        return m([s, name](Args& a) {
          std::string chars = a.arg(0, "chars").kind == Value::kString ? a.arg(0, "chars").s : "";
          return Value::string(strip_chars(s, chars, name != "rstrip", name != "lstrip"));
        });
      if (name == "upper" || name == "lower")
        return m([s, name](Args&) { return Value::string(case_map(s, name == "upper")); });
      if (name == "title") return m([s](Args&) { return Value::string(title_case(s, false)); });
      if (name == "capitalize") return m([s](Args&) { return Value::string(title_case(s, true)); });
      if (name == "startswith" || name == "endswith")
        return m([s, name](Args& a) {
          std::string x = a.arg(0, "prefix").str();
          bool r = x.size() <= s.size() &&
                   (name == "startswith" ? s.compare(0, x.size(), x) == 0
                                         : s.compare(s.size() - x.size(), x.size(), x) == 0);
          return Value::boolean(r);
        });
      if (name == "format")  // Python's str.format: {} / {0} / {name}, {{ and }}; no format specs
        return m([s, line](Args& a) {
          std::string r;
          size_t next = 0;
          for (size_t k = 0; k < s.size(); ++k) {
            const char c = s[k];
            if ((c == '{' || c == '}') && k + 1 < s.size() && s[k + 1] == c) {
              r += c;
              ++k;
            } else if (c == '{') {
              const size_t e = s.find('}', k);
              if (e == std::string::npos) error_at(line, "format(): unmatched '{'");
              const std::string field = s.substr(k + 1, e - k - 1);
              if (field.find_first_of(":!") != std::string::npos)
                error_at(line, "format(): format specs are not supported ('{" + field + "}')");
              Value v;
              if (field.empty())
                v = next < a.pos.size() ? a.pos[next++] : Value();
              else if (std::isdigit(static_cast<unsigned char>(field[0])))
                v = static_cast<size_t>(std::stoul(field)) < a.pos.size() ? a.pos[std::stoul(field)]
                                                                          : Value();
              else if (const Value* kv = a.kwarg(field))
                v = *kv;
              if (!v.defined()) error_at(line, "format(): no argument for '{" + field + "}'");
              r += v.str();
              k = e;
            } else {
              r += c;
            }
          }
          return Value::string(r);
        });
      if (name == "replace")
        return m([s](Args& a) {
          std::string from = a.arg(0, "old").str(), to = a.arg(1, "new").str(), r;
          if (from.empty()) return Value::string(s);
          size_t pos = 0;
          for (size_t f; (f = s.find(from, pos)) != std::string::npos; pos = f + from.size())
            r += s.substr(pos, f - pos) + to;
          return Value::string(r + s.substr(pos));
        });
      if (name == "split")
        return m([s](Args& a) {
          Value sep = a.arg(0, "sep");
          Array r;
          if (!sep.defined() || sep.kind == Value::kNone) {
            size_t i = 0;
            while (i < s.size()) {
              while (i < s.size() && is_space(s[i])) ++i;
              size_t j = i;
              while (j < s.size() && !is_space(s[j])) ++j;
              if (j > i) r.push_back(Value::string(s.substr(i, j - i)));
              i = j;
            }
          } else {
            if (sep.s.empty()) fail("chat template: split() with an empty separator");
            size_t pos = 0;
            for (size_t f; (f = s.find(sep.s, pos)) != std::string::npos; pos = f + sep.s.size())
              r.push_back(Value::string(s.substr(pos, f - pos)));
            r.push_back(Value::string(s.substr(pos)));
          }
          return Value::array(std::move(r));
        });
    }
    if (obj.kind == Value::kObject) {
      if (name == "items" || name == "keys" || name == "values")
        return m([obj, name](Args&) {
          Array r;
          for (const auto& [k, v] : *obj.o) {
            if (name == "items")
              r.push_back(Value::array({key_value(k), v}));
            else
              r.push_back(name == "keys" ? key_value(k) : v);
          }
          return Value::array(std::move(r));
        });
      if (name == "get")
        return m([obj](Args& a) {
          const Value* v = obj.find(dict_key(a.arg(0, "key")));
          return v ? *v : a.arg(1, "default", Value::none());
        });
    }
    (void)line;
    return Value();
  }

  // Python's < for the sort filters: numbers by value, strings by bytes (lowercased unless
  // case-sensitive), lists element by element; anything else is an error.
  static bool less(const Value& x, const Value& y, bool case_sensitive, int line) {
    if (is_num(x) && is_num(y)) return to_num(x) < to_num(y);
    if (x.kind == Value::kString && y.kind == Value::kString)
      return case_sensitive ? x.s < y.s : case_map(x.s, false) < case_map(y.s, false);
    error_at(line, std::string("cannot order ") + x.type_name() + " and " + y.type_name());
  }

  Value filter(const std::string& name, Value v, Args& a, int line) {
    if (name == "trim") return Value::string(strip_chars(v.str(), "", true, true));
    if (name == "upper" || name == "lower") return Value::string(case_map(v.str(), name == "upper"));
    if (name == "title") return Value::string(title_case(v.str(), false));
    if (name == "capitalize") return Value::string(title_case(v.str(), true));
    if (name == "safe" || name == "e" || name == "escape") {
      if (name != "safe") error_at(line, "unsupported filter '" + name + "'");
      return v;
    }
    if (name == "string") return Value::string(v.str());
    if (name == "tojson") {
      Value ind = a.arg(0, "indent");
      return Value::string(v.to_json(ind.kind == Value::kInt ? static_cast<int>(ind.i) : -1));
    }
    if (name == "length" || name == "count") {
      switch (v.kind) {
        case Value::kString:
          return Value::integer(static_cast<int64_t>(tok::decode_utf8(v.s).size()));
        case Value::kArray:
          return Value::integer(static_cast<int64_t>(v.a->size()));
        case Value::kObject:
          return Value::integer(static_cast<int64_t>(v.o->size()));
        case Value::kUndefined:
          return Value::integer(0);
        default:
          error_at(line, std::string("length of ") + v.type_name());
      }
    }
    if (name == "default" || name == "d") {
      bool boolean = a.arg(1, "boolean", Value::boolean(false)).truthy();
      if (!v.defined() || (boolean && !v.truthy())) return a.arg(0, "default_value", Value::string(""));
      return v;
    }
    if (name == "first" || name == "last") {
      Array items = iterate(v, line);
      if (items.empty()) return Value();
      return name == "first" ? items.front() : items.back();
    }
    if (name == "list") return Value::array(iterate(v, line));
    if (name == "reverse") {
      if (v.kind == Value::kString) {
        auto chars = utf8_chars(v.s);
        std::string r;
        for (auto it = chars.rbegin(); it != chars.rend(); ++it) r += *it;
        return Value::string(r);
      }
      Array items = iterate(v, line);
      std::reverse(items.begin(), items.end());
      return Value::array(std::move(items));
    }
    if (name == "join") {
      std::string sep = a.arg(0, "d", Value::string("")).str(), r;
      Array items = iterate(v, line);
      for (size_t k = 0; k < items.size(); ++k) r += (k ? sep : "") + items[k].str();
      return Value::string(r);
    }
    if (name == "int") {
      if (v.kind == Value::kString) {
        try {
          return Value::integer(std::stoll(v.s));
        } catch (...) {
          return a.arg(0, "default", Value::integer(0));
        }
      }
      return is_num(v) ? Value::integer(static_cast<int64_t>(to_num(v)))
                       : a.arg(0, "default", Value::integer(0));
    }
    if (name == "float") {
      if (v.kind == Value::kString) return Value::number(std::strtod(v.s.c_str(), nullptr));
      return Value::number(is_num(v) ? to_num(v) : 0.0);
    }
    if (name == "abs") {
      if (v.kind == Value::kInt) return Value::integer(v.i < 0 ? -v.i : v.i);
      return Value::number(std::fabs(to_num(v)));
    }
    if (name == "replace") {
      Args b;
      b.pos = a.pos;
      return method(Value::string(v.str()), "replace", line).fn->operator()(b);
    }
    if (name == "items") {
      if (v.kind != Value::kObject) error_at(line, "items of a non-dict");
      Args none;
      return method(v, "items", line).fn->operator()(none);
    }
    if (name == "dictsort") {  // [key, value] pairs by key (case-insensitive unless asked), or by value
      if (v.kind != Value::kObject) error_at(line, "dictsort of a non-dict");
      const bool cs = a.arg(0, "case_sensitive", Value::boolean(false)).truthy();
      const bool by_value = a.arg(1, "by", Value::string("key")).str() == "value";
      const bool rev = a.arg(2, "reverse", Value::boolean(false)).truthy();
      Array pairs;
      for (const auto& [k, x] : *v.o) pairs.push_back(Value::array({key_value(k), x}));
      std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& p, const Value& q) {
        const size_t i = by_value ? 1 : 0;
        return rev ? less((*q.a)[i], (*p.a)[i], cs, line) : less((*p.a)[i], (*q.a)[i], cs, line);
      });
      return Value::array(std::move(pairs));
    }
    if (name == "min" || name == "max") {  // of a sequence (case-insensitive strings), undefined if empty
      const bool cs = a.arg(0, "case_sensitive", Value::boolean(false)).truthy();
      const Value* attr = a.kwarg("attribute");
      Value best;
      for (const Value& item : iterate(v, line)) {
        const Value key = attr ? item.get(attr->str()) : item;
        if (!best.defined() || (name == "min" ? less(key, attr ? best.get(attr->str()) : best, cs, line)
                                              : less(attr ? best.get(attr->str()) : best, key, cs, line)))
          best = item;
      }
      return best;
    }
    if (name == "indent") {  // Jinja2's: lines after the first (and the first when first=true)
      const Value w = a.arg(0, "width", Value::integer(4));
      const std::string pad = w.kind == Value::kString
                                  ? w.s
                                  : std::string(static_cast<size_t>(to_int(w, line, "indent width")), ' ');
      const bool first = a.arg(1, "first", Value::boolean(false)).truthy();
      const bool blank = a.arg(2, "blank", Value::boolean(false)).truthy();
      std::vector<std::string> lines;
      const std::string text = v.str() + "\n";    // Jinja2 appends one before splitlines()
      for (size_t pos = 0; pos < text.size();) {  // str.splitlines on \n, \r\n, \r
        const size_t e = text.find_first_of("\r\n", pos);
        lines.push_back(text.substr(pos, e == std::string::npos ? std::string::npos : e - pos));
        if (e == std::string::npos) break;
        pos = e + (text[e] == '\r' && e + 1 < text.size() && text[e + 1] == '\n' ? 2 : 1);
      }
      if (lines.empty()) lines.emplace_back();
      std::string r = lines[0];
      for (size_t k = 1; k < lines.size(); ++k)
        r += "\n" + (blank || !lines[k].empty() ? pad : "") + lines[k];
      return Value::string(first ? pad + r : r);
    }
    if (name == "map") {
      if (!v.truthy()) return Value::array();  // Jinja2 maps, selects and rejects nothing over none
      const Value* attr = a.kwarg("attribute");
      Array r;
      for (const Value& item : iterate(v, line)) {
        if (attr)
          r.push_back(item.get(attr->str()));
        else if (!a.pos.empty()) {
          Args none;
          r.push_back(filter(a.pos[0].str(), item, none, line));
        } else
          error_at(line, "map() needs attribute= or a filter name");
      }
      return Value::array(std::move(r));
    }
    if (name == "selectattr" || name == "rejectattr") {
      if (!v.truthy()) return Value::array();
      std::string attr = a.arg(0, "attr").str();
      Array r;
      for (const Value& item : iterate(v, line)) {
        Value field = item.get(attr);
        bool ok;
        if (a.pos.size() < 2) {
          ok = field.truthy();
        } else {
          Args targs;
          for (size_t k = 2; k < a.pos.size(); ++k) targs.pos.push_back(a.pos[k]);
          ok = test(a.pos[1].str(), field, targs, line);
        }
        if (ok == (name == "selectattr")) r.push_back(item);
      }
      return Value::array(std::move(r));
    }
    error_at(line, "unsupported filter '" + name + "'");
  }

  bool test(const std::string& name, const Value& v, Args& a, int line) {
    if (name == "defined") return v.defined();
    if (name == "undefined") return !v.defined();
    if (name == "none") return v.kind == Value::kNone;
    if (name == "string") return v.kind == Value::kString;
    if (name == "number") return v.kind == Value::kInt || v.kind == Value::kFloat;
    if (name == "integer") return v.kind == Value::kInt;
    if (name == "float") return v.kind == Value::kFloat;
    if (name == "boolean") return v.kind == Value::kBool;
    if (name == "true") return v.kind == Value::kBool && v.b;
    if (name == "false") return v.kind == Value::kBool && !v.b;
    if (name == "mapping") return v.kind == Value::kObject;
    if (name == "sequence" || name == "iterable")
      return v.kind == Value::kArray || v.kind == Value::kString || v.kind == Value::kObject;
    if (name == "callable") return v.kind == Value::kFunction;
    if (name == "odd" || name == "even")
      return (to_int(v, line, "odd/even test") % 2 != 0) == (name == "odd");
    if (name == "lower" || name == "upper")
      return v.kind == Value::kString && v.s == case_map(v.s, name == "upper");
    if (name == "eq" || name == "equalto" || name == "==" || name == "sameas")
      return equal(v, a.arg(0, "other"));
    if (name == "ne" || name == "!=") return !equal(v, a.arg(0, "other"));
    if (name == "in") return contains(a.arg(0, "seq"), v, line);
    error_at(line, "unsupported test '" + name + "'");
  }

  bool contains(const Value& container, const Value& item, int line) {
    switch (container.kind) {
      case Value::kString:
        if (item.kind != Value::kString) error_at(line, "'in <string>' requires a string");
        return container.s.find(item.s) != std::string::npos;
      case Value::kArray:
        for (const Value& e : *container.a)
          if (equal(e, item)) return true;
        return false;
      case Value::kObject:
        return (item.kind == Value::kString || item.kind == Value::kInt) &&
               container.find(dict_key(item)) != nullptr;
      case Value::kUndefined:
        return false;
      default:
        error_at(line, std::string("'in' on ") + container.type_name());
    }
  }

  Value binary(const std::string& op, const Value& l, const Value& r, int line) {
    if (op == "~") return Value::string(l.str() + r.str());
    if (op == "==") return Value::boolean(equal(l, r));
    if (op == "!=") return Value::boolean(!equal(l, r));
    if (op == "in") return Value::boolean(contains(r, l, line));
    if (op == "not in") return Value::boolean(!contains(r, l, line));
    if (op == "<" || op == ">" || op == "<=" || op == ">=") {
      int c;
      if (is_num(l) && is_num(r))
        c = to_num(l) < to_num(r) ? -1 : to_num(l) > to_num(r) ? 1 : 0;
      else if (l.kind == Value::kString && r.kind == Value::kString)
        c = l.s.compare(r.s);
      else
        error_at(line, std::string("cannot compare ") + l.type_name() + " and " + r.type_name());
      return Value::boolean(op == "<" ? c < 0 : op == ">" ? c > 0 : op == "<=" ? c <= 0 : c >= 0);
    }
    if (op == "+") {
      if (l.kind == Value::kString && r.kind == Value::kString) return Value::string(l.s + r.s);
      if (l.kind == Value::kArray && r.kind == Value::kArray) {
        Array a = *l.a;
        a.insert(a.end(), r.a->begin(), r.a->end());
        return Value::array(std::move(a));
      }
    }
    if (op == "*" && l.kind == Value::kString && r.kind == Value::kInt) {
      std::string s;
      for (int64_t k = 0; k < r.i && s.size() < (1u << 24); ++k) s += l.s;
      return Value::string(s);
    }
    if (!is_num(l) || !is_num(r))
      error_at(line, std::string("unsupported operand types for ") + op + ": " + l.type_name() + " and " +
                         r.type_name());
    bool ints = l.kind != Value::kFloat && r.kind != Value::kFloat;
    double a = to_num(l), b = to_num(r);
    if (op == "+") return ints ? Value::integer(int64_t(a) + int64_t(b)) : Value::number(a + b);
    if (op == "-") return ints ? Value::integer(int64_t(a) - int64_t(b)) : Value::number(a - b);
    if (op == "*") return ints ? Value::integer(int64_t(a) * int64_t(b)) : Value::number(a * b);
    if (op == "**")
      return ints && b >= 0 ? Value::integer(static_cast<int64_t>(std::pow(a, b)))
                            : Value::number(std::pow(a, b));
    if (b == 0) error_at(line, "division by zero");
    if (op == "/") return Value::number(a / b);
    if (op == "//")
      return ints ? Value::integer(static_cast<int64_t>(std::floor(a / b)))
                  : Value::number(std::floor(a / b));
    if (op == "%") {
      if (ints) {
        int64_t x = int64_t(a), y = int64_t(b), m = x % y;
        return Value::integer(m != 0 && ((m < 0) != (y < 0)) ? m + y : m);
      }
      return Value::number(a - b * std::floor(a / b));
    }
    error_at(line, "unsupported operator " + op);
  }

  Args args_of(const Expr& e, size_t first) {
    Args a;
    size_t n_kw = e.kw.size();
    size_t n_pos = e.kids.size() - first - n_kw;
    for (size_t k = 0; k < n_pos; ++k) a.pos.push_back(eval(*e.kids[first + k]));
    for (size_t k = 0; k < n_kw; ++k) a.kw.emplace_back(e.kw[k], eval(*e.kids[first + n_pos + k]));
    return a;
  }

  Value eval(const Expr& e) {
    if (++depth_ > 500) error_at(e.line, "expression nesting too deep");
    struct Guard {
      int& d;
      ~Guard() { --d; }
    } guard{depth_};
    switch (e.kind) {
      case Expr::kLit:
        return e.lit;
      case Expr::kName:
        return lookup(e.name);
      case Expr::kAttr: {
        Value obj = eval(*e.kids[0]);
        if (!obj.defined()) error_at(e.line, "'" + e.name + "' of an undefined value");
        if (obj.kind == Value::kObject) {
          if (const Value* v = obj.find(e.name)) return *v;
        }
        if (obj.kind == Value::kArray && !e.name.empty() &&
            std::isdigit(static_cast<unsigned char>(e.name[0]))) {
          size_t k = std::stoul(e.name);
          return k < obj.a->size() ? (*obj.a)[k] : Value();
        }
        return method(obj, e.name, e.line);
      }
      case Expr::kIndex: {
        Value obj = eval(*e.kids[0]);
        Value key = eval(*e.kids[1]);
        if (!obj.defined()) error_at(e.line, "subscript of an undefined value");
        if (obj.kind == Value::kObject) {
          if (key.kind != Value::kString && key.kind != Value::kInt) return Value();
          if (const Value* v = obj.find(dict_key(key))) return *v;
          return key.kind == Value::kString ? method(obj, key.s, e.line) : Value();
        }
        if (obj.kind == Value::kArray || obj.kind == Value::kString) {
          if (key.kind != Value::kInt) error_at(e.line, "list/string index must be an integer");
          std::vector<std::string> chars;
          if (obj.kind == Value::kString) chars = utf8_chars(obj.s);
          int64_t n = obj.kind == Value::kArray ? static_cast<int64_t>(obj.a->size())
                                                : static_cast<int64_t>(chars.size());
          int64_t k = key.i < 0 ? key.i + n : key.i;
          if (k < 0 || k >= n) return Value();
          return obj.kind == Value::kArray ? (*obj.a)[static_cast<size_t>(k)]
                                           : Value::string(chars[static_cast<size_t>(k)]);
        }
        error_at(e.line, std::string("cannot subscript ") + obj.type_name());
      }
      case Expr::kSlice: {
        Value obj = eval(*e.kids[0]);
        bool is_str = obj.kind == Value::kString;
        std::vector<std::string> chars;
        if (is_str)
          chars = utf8_chars(obj.s);
        else if (obj.kind != Value::kArray)
          error_at(e.line, std::string("cannot slice ") + obj.type_name());
        int64_t n = is_str ? static_cast<int64_t>(chars.size()) : static_cast<int64_t>(obj.a->size());
        int64_t step = e.kids[3] ? to_int(eval(*e.kids[3]), e.line, "slice step") : 1;
        if (step == 0) error_at(e.line, "slice step cannot be zero");
        auto norm = [&](const ExprP& x, int64_t dflt) {
          if (!x) return dflt;
          Value v = eval(*x);
          if (v.kind == Value::kNone) return dflt;
          int64_t k = to_int(v, e.line, "slice index");
          if (k < 0) k += n;
          return step > 0 ? std::clamp<int64_t>(k, 0, n) : std::clamp<int64_t>(k, -1, n - 1);
        };
        int64_t b = norm(e.kids[1], step > 0 ? 0 : n - 1), en = norm(e.kids[2], step > 0 ? n : -1);
        Array r;
        std::string s;
        for (int64_t k = b; step > 0 ? k < en : k > en; k += step) {
          if (is_str)
            s += chars[static_cast<size_t>(k)];
          else
            r.push_back((*obj.a)[static_cast<size_t>(k)]);
        }
        return is_str ? Value::string(s) : Value::array(std::move(r));
      }
      case Expr::kCall: {
        Value fn = eval(*e.kids[0]);
        if (fn.kind != Value::kFunction)
          error_at(e.line, "call of a non-function (unsupported method or global?)");
        Args a = args_of(e, 1);
        return (*fn.fn)(a);
      }
      case Expr::kFilter: {
        Value v = eval(*e.kids[0]);
        Args a = args_of(e, 1);
        return filter(e.name, std::move(v), a, e.line);
      }
      case Expr::kTest: {
        Value v = eval(*e.kids[0]);
        Args a = args_of(e, 1);
        return Value::boolean(test(e.name, v, a, e.line) != e.negate);
      }
      case Expr::kNeg: {
        Value v = eval(*e.kids[0]);
        if (v.kind == Value::kInt) return Value::integer(-v.i);
        if (v.kind == Value::kFloat) return Value::number(-v.f);
        error_at(e.line, std::string("unary minus on ") + v.type_name());
      }
      case Expr::kNot:
        return Value::boolean(!eval(*e.kids[0]).truthy());
      case Expr::kAnd: {
        Value l = eval(*e.kids[0]);
        return l.truthy() ? eval(*e.kids[1]) : l;
      }
      case Expr::kOr: {
        Value l = eval(*e.kids[0]);
        return l.truthy() ? l : eval(*e.kids[1]);
      }
      case Expr::kBin: {
        Value l = eval(*e.kids[0]);
        Value r = eval(*e.kids[1]);
        return binary(e.name, l, r, e.line);
      }
      case Expr::kCond:
        if (eval(*e.kids[0]).truthy()) return eval(*e.kids[1]);
        return e.kids.size() > 2 ? eval(*e.kids[2]) : Value();
      case Expr::kList: {
        Array a;
        for (const auto& k : e.kids) a.push_back(eval(*k));
        return Value::array(std::move(a));
      }
      case Expr::kDict: {
        Value d = Value::object();
        for (size_t k = 0; k + 1 < e.kids.size(); k += 2)
          d.set(dict_key(eval(*e.kids[k])), eval(*e.kids[k + 1]));
        return d;
      }
    }
    return Value();
  }

  std::vector<std::map<std::string, Value>> scopes_;
  int depth_ = 0;
  int macro_depth_ = 0;
};

}  // namespace

std::string render(const std::vector<Node>& nodes, const nlohmann::ordered_json& context, int64_t now_utc) {
  Renderer r(context, now_utc);
  r.exec(nodes);
  return std::move(r.out);
}

}  // namespace nbits::jinja::detail
