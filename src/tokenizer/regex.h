// A small backtracking regex engine (Oniguruma/Perl semantics: leftmost, first alternative wins)
// for the pre-tokenizer patterns of tokenizer.json files. Supported: literals and escapes,
// alternation, groups (capturing groups act as non-capturing), (?i:...) on literals, (?=...)
// and (?!...), classes [...] with ranges, \p{..}/\P{..} general categories, \s \S \d \D \w \W,
// '.', ^ $, quantifiers * + ? {n,m} (greedy and lazy). Anything else is refused at construction.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nbits::tok {

class Regex {
 public:
  // Compiles a pattern (UTF-8); throws nbits::Error naming the unsupported construct.
  explicit Regex(std::string_view pattern);
  Regex() = default;

  // Leftmost match in text[from..); returns false if none. [begin, end) in code points.
  bool search(const uint32_t* text, size_t n, size_t from, size_t& begin, size_t& end) const;
  // Calls fn(begin, end) for each non-overlapping match, like Rust's find_iter.
  template <typename Fn>
  void for_each_match(const uint32_t* text, size_t n, Fn&& fn) const {
    size_t pos = 0, b, e;
    while (pos <= n && search(text, n, pos, b, e)) {
      fn(b, e);
      pos = e > b ? e : e + 1;
    }
  }
  const std::string& pattern() const { return pattern_; }

  struct ClassItem {
    enum Kind : uint8_t { kRange, kGcMask, kSpace, kWord } kind;
    bool negated;
    uint32_t lo, hi;  // kRange bounds; kGcMask: lo = mask of general categories
  };
  struct CharClass {
    bool negated = false;
    std::vector<ClassItem> items;
    uint64_t ascii[2] = {0, 0};  // precomputed membership for code points < 128
    bool contains(uint32_t cp) const;
    bool contains_slow(uint32_t cp) const;
  };
  enum Op : uint8_t { kChar, kCharFold, kClass, kAny, kSplit, kJmp, kMatch, kLookahead, kBegin, kEnd };
  struct Inst {
    Op op;
    bool flag = false;  // kSplit: prefer y; kLookahead: negative
    uint32_t x = 0, y = 0;
  };

 private:
  bool run(const uint32_t* text, size_t n, uint32_t pc, size_t pos, size_t& end) const;
  std::string pattern_;
  std::vector<Inst> prog_;
  std::vector<CharClass> classes_;
  friend class RegexCompiler;
};

}  // namespace nbits::tok
