// Backtracking regex engine for pre-tokenizer patterns (see regex.h).
#include "tokenizer/regex.h"

#include <memory>
#include <utility>

#include "base/error.h"
#include "tokenizer/unicode.h"

namespace nbits::tok {

namespace {

constexpr uint32_t kInf = 0xFFFFFFFF;

struct Node {
  enum Kind { kEmpty, kChar, kClass, kAny, kCat, kAlt, kRepeat, kLook, kBegin, kEnd } kind = kEmpty;
  uint32_t c = 0;
  bool fold = false;
  uint32_t cls = 0;
  uint32_t min = 0, max = 0;
  bool greedy = true;
  bool neg = false;
  std::vector<Node> kids;
};

uint32_t gc_bit(Gc g) { return 1u << static_cast<unsigned>(g); }

uint32_t gc_mask_of(std::string_view name) {
  struct Entry {
    const char* name;
    uint32_t mask;
  };
  auto r = [](Gc a, Gc b) {
    uint32_t m = 0;
    for (unsigned g = static_cast<unsigned>(a); g <= static_cast<unsigned>(b); ++g) m |= 1u << g;
    return m;
  };
  static const Entry entries[] = {
      {"L", r(Gc::Lu, Gc::Lo)},
      {"Letter", r(Gc::Lu, Gc::Lo)},
      {"M", r(Gc::Mn, Gc::Me)},
      {"Mark", r(Gc::Mn, Gc::Me)},
      {"N", r(Gc::Nd, Gc::No)},
      {"Number", r(Gc::Nd, Gc::No)},
      {"P", r(Gc::Pc, Gc::Po)},
      {"Punctuation", r(Gc::Pc, Gc::Po)},
      {"S", r(Gc::Sm, Gc::So)},
      {"Symbol", r(Gc::Sm, Gc::So)},
      {"Z", r(Gc::Zs, Gc::Zp)},
      {"Separator", r(Gc::Zs, Gc::Zp)},
      {"C", r(Gc::Cc, Gc::Co) | gc_bit(Gc::Cn)},
      {"Other", r(Gc::Cc, Gc::Co) | gc_bit(Gc::Cn)},
  };
  for (const auto& e : entries)
    if (name == e.name) return e.mask;
  static const char* names[] = {"Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd",
                                "Nl", "No", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm",
                                "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co"};
  for (unsigned g = 0; g < 30; ++g)
    if (name == names[g]) return 1u << g;
  return 0;
}

}  // namespace

class RegexCompiler {
 public:
  RegexCompiler(Regex& re, std::string_view pattern) : re_(re), cps_(decode_utf8(pattern)) {}

  void compile() {
    Node root = parse_alt(false);
    if (i_ < cps_.size()) bad("unbalanced ')'");
    emit(root);
    re_.prog_.push_back({Regex::kMatch});
    for (auto& c : re_.classes_)
      for (uint32_t cp = 0; cp < 128; ++cp)
        if (c.contains_slow(cp)) c.ascii[cp >> 6] |= uint64_t{1} << (cp & 63);
  }

 private:
  [[noreturn]] void bad(const std::string& what) {
    fail("unsupported regex construct in pre-tokenizer pattern (", what, " at offset ", i_,
         "): ", re_.pattern_);
  }
  bool more() const { return i_ < cps_.size(); }
  uint32_t peek() const { return cps_[i_]; }
  bool eat(uint32_t c) {
    if (more() && peek() == c) {
      ++i_;
      return true;
    }
    return false;
  }

  Node parse_alt(bool fold) {
    Node alt;
    alt.kind = Node::kAlt;
    alt.kids.push_back(parse_cat(fold));
    while (eat('|')) alt.kids.push_back(parse_cat(fold));
    if (alt.kids.size() == 1) return std::move(alt.kids[0]);
    return alt;
  }

  Node parse_cat(bool fold) {
    Node cat;
    cat.kind = Node::kCat;
    while (more() && peek() != '|' && peek() != ')') cat.kids.push_back(parse_repeat(fold));
    return cat;
  }

  static bool nullable(const Node& n) {
    switch (n.kind) {
      case Node::kEmpty:
      case Node::kLook:
      case Node::kBegin:
      case Node::kEnd:
        return true;
      case Node::kCat:
        for (const auto& k : n.kids)
          if (!nullable(k)) return false;
        return true;
      case Node::kAlt:
        for (const auto& k : n.kids)
          if (nullable(k)) return true;
        return false;
      case Node::kRepeat:
        return n.min == 0 || nullable(n.kids[0]);
      default:
        return false;
    }
  }

  uint32_t parse_number() {
    uint32_t v = 0;
    bool any = false;
    while (more() && peek() >= '0' && peek() <= '9') {
      v = v * 10 + (cps_[i_++] - '0');
      any = true;
      if (v > 1000) bad("repeat count over 1000");
    }
    if (!any) bad("malformed {n,m} quantifier");
    return v;
  }

  Node parse_repeat(bool fold) {
    Node atom = parse_atom(fold);
    for (;;) {
      uint32_t mn, mx;
      if (eat('*')) {
        mn = 0, mx = kInf;
      } else if (eat('+')) {
        mn = 1, mx = kInf;
      } else if (eat('?')) {
        mn = 0, mx = 1;
      } else if (more() && peek() == '{') {
        ++i_;
        mn = parse_number();
        mx = mn;
        if (eat(',')) mx = (more() && peek() == '}') ? kInf : parse_number();
        if (!eat('}')) bad("malformed {n,m} quantifier");
        if (mx < mn) bad("{n,m} with m < n");
      } else {
        return atom;
      }
      if (atom.kind == Node::kLook || atom.kind == Node::kBegin || atom.kind == Node::kEnd)
        bad("quantified assertion");
      bool greedy = true;
      if (eat('?'))
        greedy = false;
      else if (more() && peek() == '+')
        bad("possessive quantifier");
      if (mx == kInf && nullable(atom)) bad("unbounded repeat of an expression that can match empty");
      Node r;
      r.kind = Node::kRepeat;
      r.min = mn;
      r.max = mx;
      r.greedy = greedy;
      r.kids.push_back(std::move(atom));
      atom = std::move(r);
    }
  }

  Node char_node(uint32_t c, bool fold) {
    Node n;
    n.kind = Node::kChar;
    n.fold = fold;  // case-insensitive: equal under simple case folding
    n.c = fold ? case_fold(c) : c;
    return n;
  }

  Node class_node(Regex::CharClass cls) {
    Node n;
    n.kind = Node::kClass;
    n.cls = static_cast<uint32_t>(re_.classes_.size());
    re_.classes_.push_back(std::move(cls));
    return n;
  }

  // Parses an escape after '\'; returns true and fills item for class escapes, else sets c.
  bool parse_escape(Regex::ClassItem& item, uint32_t& c) {
    if (!more()) bad("trailing backslash");
    uint32_t e = cps_[i_++];
    auto cls = [&](Regex::ClassItem::Kind k, bool neg, uint32_t mask) {
      item = {k, neg, mask, 0};
      return true;
    };
    switch (e) {
      case 's':
        return cls(Regex::ClassItem::kSpace, false, 0);
      case 'S':
        return cls(Regex::ClassItem::kSpace, true, 0);
      case 'd':
        return cls(Regex::ClassItem::kGcMask, false, gc_bit(Gc::Nd));
      case 'D':
        return cls(Regex::ClassItem::kGcMask, true, gc_bit(Gc::Nd));
      case 'w':
        return cls(Regex::ClassItem::kWord, false, 0);
      case 'W':
        return cls(Regex::ClassItem::kWord, true, 0);
      case 'p':
      case 'P': {
        std::string name;
        if (eat('{')) {
          bool neg = eat('^');
          while (more() && peek() != '}') name.push_back(static_cast<char>(cps_[i_++]));
          if (!eat('}')) bad("unterminated \\p{...}");
          uint32_t mask = gc_mask_of(name);
          if (!mask) bad("Unicode property \\p{" + name + "}");
          return cls(Regex::ClassItem::kGcMask, (e == 'P') != neg, mask);
        }
        if (!more()) bad("trailing \\p");
        name.push_back(static_cast<char>(cps_[i_++]));
        uint32_t mask = gc_mask_of(name);
        if (!mask) bad("Unicode property \\p" + name);
        return cls(Regex::ClassItem::kGcMask, e == 'P', mask);
      }
      case 'n':
        c = '\n';
        return false;
      case 'r':
        c = '\r';
        return false;
      case 't':
        c = '\t';
        return false;
      case 'f':
        c = '\f';
        return false;
      case 'v':
        c = '\v';
        return false;
      case 'x': {
        bool brace = eat('{');
        uint32_t v = 0;
        int digits = 0;
        while (more() && (brace || digits < 2)) {
          uint32_t h = peek();
          int d = (h >= '0' && h <= '9')   ? int(h - '0')
                  : (h >= 'a' && h <= 'f') ? int(h - 'a' + 10)
                  : (h >= 'A' && h <= 'F') ? int(h - 'A' + 10)
                                           : -1;
          if (d < 0) break;
          v = v * 16 + static_cast<uint32_t>(d);
          ++i_;
          if (++digits > 6) bad("\\x escape too long");
        }
        if (digits == 0 || (brace && !eat('}')) || v > 0x10FFFF) bad("malformed \\x escape");
        c = v;
        return false;
      }
      default:
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9'))
          bad(std::string("escape \\") + static_cast<char>(e));
        c = e;
        return false;
    }
  }

  Node parse_class(bool fold) {
    if (fold) bad("character class inside a case-insensitive group");
    Regex::CharClass cls;
    cls.negated = eat('^');
    bool first = true;
    for (;;) {
      if (!more()) bad("unterminated character class");
      if (peek() == ']' && !first) {
        ++i_;
        break;
      }
      first = false;
      if (peek() == '[') bad("nested character class");
      uint32_t lo;
      if (eat('\\')) {
        Regex::ClassItem item;
        if (parse_escape(item, lo)) {
          cls.items.push_back(item);
          continue;
        }
      } else {
        lo = cps_[i_++];
      }
      uint32_t hi = lo;
      if (more() && peek() == '-' && i_ + 1 < cps_.size() && cps_[i_ + 1] != ']') {
        ++i_;
        if (eat('\\')) {
          Regex::ClassItem item;
          if (parse_escape(item, hi)) bad("class escape as a range bound");
        } else {
          hi = cps_[i_++];
        }
        if (hi < lo) bad("reversed range in character class");
      }
      cls.items.push_back({Regex::ClassItem::kRange, false, lo, hi});
    }
    return class_node(std::move(cls));
  }

  Node parse_atom(bool fold) {
    uint32_t c = cps_[i_++];
    switch (c) {
      case '(': {
        Node inner;
        if (eat('?')) {
          if (eat(':')) {
            inner = parse_alt(fold);
          } else if (eat('=') || (more() && peek() == '!')) {
            bool neg = eat('!');
            Node look;
            look.kind = Node::kLook;
            look.neg = neg;
            look.kids.push_back(parse_alt(fold));
            inner = std::move(look);
          } else if (more() && peek() == 'i' && i_ + 1 < cps_.size() && cps_[i_ + 1] == ':') {
            i_ += 2;
            inner = parse_alt(true);
          } else {
            bad("group flag or lookbehind");
          }
        } else {
          inner = parse_alt(fold);
        }
        if (!eat(')')) bad("missing ')'");
        return inner;
      }
      case '[':
        return parse_class(fold);
      case '.': {
        Node n;
        n.kind = Node::kAny;
        return n;
      }
      case '^': {
        Node n;
        n.kind = Node::kBegin;
        return n;
      }
      case '$': {
        Node n;
        n.kind = Node::kEnd;
        return n;
      }
      case '\\': {
        Regex::ClassItem item;
        uint32_t lit;
        if (parse_escape(item, lit)) {
          Regex::CharClass cls;
          cls.items.push_back(item);
          return class_node(std::move(cls));
        }
        return char_node(lit, fold);
      }
      case '*':
      case '+':
      case '?':
      case '{':
        --i_;
        bad("quantifier without operand");
      case ')':
        --i_;
        bad("unbalanced ')'");
      default:
        return char_node(c, fold);
    }
  }

  uint32_t pc() const { return static_cast<uint32_t>(re_.prog_.size()); }
  uint32_t push(Regex::Op op, uint32_t x = 0, uint32_t y = 0, bool flag = false) {
    re_.prog_.push_back({op, flag, x, y});
    return pc() - 1;
  }

  void emit(const Node& n) {
    switch (n.kind) {
      case Node::kEmpty:
        return;
      case Node::kChar:
        push(n.fold ? Regex::kCharFold : Regex::kChar, n.c);
        return;
      case Node::kClass:
        push(Regex::kClass, n.cls);
        return;
      case Node::kAny:
        push(Regex::kAny);
        return;
      case Node::kBegin:
        push(Regex::kBegin);
        return;
      case Node::kEnd:
        push(Regex::kEnd);
        return;
      case Node::kCat:
        for (const auto& k : n.kids) emit(k);
        return;
      case Node::kAlt: {
        std::vector<uint32_t> jumps;
        for (size_t k = 0; k + 1 < n.kids.size(); ++k) {
          uint32_t split = push(Regex::kSplit);
          re_.prog_[split].x = pc();
          emit(n.kids[k]);
          jumps.push_back(push(Regex::kJmp));
          re_.prog_[split].y = pc();
        }
        emit(n.kids.back());
        for (uint32_t j : jumps) re_.prog_[j].x = pc();
        return;
      }
      case Node::kLook: {
        uint32_t look = push(Regex::kLookahead, 0, 0, n.neg);
        re_.prog_[look].x = pc();
        emit(n.kids[0]);
        push(Regex::kMatch);
        re_.prog_[look].y = pc();
        return;
      }
      case Node::kRepeat: {
        for (uint32_t k = 0; k < n.min; ++k) emit(n.kids[0]);
        if (n.max == kInf) {
          uint32_t split = push(Regex::kSplit);
          emit(n.kids[0]);
          push(Regex::kJmp, split);
          set_split(split, split + 1, pc(), n.greedy);
        } else {
          std::vector<uint32_t> splits;
          for (uint32_t k = n.min; k < n.max; ++k) {
            splits.push_back(push(Regex::kSplit));
            emit(n.kids[0]);
          }
          for (uint32_t s : splits) set_split(s, s + 1, pc(), n.greedy);
        }
        return;
      }
    }
  }
  void set_split(uint32_t at, uint32_t body, uint32_t out, bool greedy) {
    re_.prog_[at].x = greedy ? body : out;
    re_.prog_[at].y = greedy ? out : body;
  }

  Regex& re_;
  std::vector<uint32_t> cps_;
  size_t i_ = 0;
};

bool Regex::CharClass::contains_slow(uint32_t cp) const {
  bool in = false;
  for (const auto& it : items) {
    bool m = false;
    switch (it.kind) {
      case ClassItem::kRange:
        m = cp >= it.lo && cp <= it.hi;
        break;
      case ClassItem::kGcMask:
        m = (it.lo >> static_cast<unsigned>(general_category(cp))) & 1;
        break;
      case ClassItem::kSpace:
        m = is_whitespace(cp);
        break;
      case ClassItem::kWord: {
        Gc g = general_category(cp);
        m = is_letter(cp) || (g >= Gc::Mn && g <= Gc::Me) || g == Gc::Nd || g == Gc::Pc;
        break;
      }
    }
    if (m != it.negated) {
      in = true;
      break;
    }
  }
  return in != negated;
}

bool Regex::CharClass::contains(uint32_t cp) const {
  if (cp < 128) return (ascii[cp >> 6] >> (cp & 63)) & 1;
  return contains_slow(cp);
}

Regex::Regex(std::string_view pattern) : pattern_(pattern) { RegexCompiler(*this, pattern).compile(); }

bool Regex::run(const uint32_t* text, size_t n, uint32_t start_pc, size_t start, size_t& end) const {
  thread_local std::vector<std::pair<uint32_t, size_t>> stack_storage;
  std::vector<std::pair<uint32_t, size_t>> local;
  // The outermost call reuses a thread-local stack; lookahead bodies use their own.
  static thread_local int depth = 0;
  auto& stack = depth == 0 ? stack_storage : local;
  ++depth;
  struct Guard {
    ~Guard() { --depth; }
  } guard;
  const size_t base = stack.size();
  stack.emplace_back(start_pc, start);
  while (stack.size() > base) {
    auto [pc, pos] = stack.back();
    stack.pop_back();
    for (;;) {
      const Inst& in = prog_[pc];
      bool ok = true;
      switch (in.op) {
        case kChar:
          ok = pos < n && text[pos] == in.x;
          ++pos;
          ++pc;
          break;
        case kCharFold:
          ok = pos < n && case_fold(text[pos]) == in.x;
          ++pos;
          ++pc;
          break;
        case kClass:
          ok = pos < n && classes_[in.x].contains(text[pos]);
          ++pos;
          ++pc;
          break;
        case kAny:
          ok = pos < n && text[pos] != '\n';
          ++pos;
          ++pc;
          break;
        case kBegin:
          ok = pos == 0;
          ++pc;
          break;
        case kEnd:
          ok = pos == n;
          ++pc;
          break;
        case kJmp:
          pc = in.x;
          break;
        case kSplit:
          stack.emplace_back(in.y, pos);
          pc = in.x;
          break;
        case kLookahead: {
          size_t e;
          bool found = run(text, n, in.x, pos, e);
          ok = found != in.flag;
          pc = in.y;
          break;
        }
        case kMatch:
          end = pos;
          stack.resize(base);
          return true;
      }
      if (!ok) break;
    }
  }
  return false;
}

bool Regex::search(const uint32_t* text, size_t n, size_t from, size_t& begin, size_t& end) const {
  for (size_t p = from; p <= n; ++p) {
    if (run(text, n, 0, p, end)) {
      begin = p;
      return true;
    }
  }
  return false;
}

}  // namespace nbits::tok
