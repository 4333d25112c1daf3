// Jinja subset, first stage: template text -> segments (text / {{ expr }} / {% stmt %}, whitespace
// control applied), and a tag's text -> expression tokens. Internal to the tokenizer room.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nbits::jinja::detail {

// Throws "chat template line L: what".
[[noreturn]] void error_at(int line, const std::string& what);
bool is_space(char c);

struct Segment {
  enum Kind { kText, kVar, kBlock } kind;
  std::string text;
  int line;
};

std::vector<Segment> lex(std::string_view src);

struct Tok {
  enum Kind { kName, kInt, kFloat, kString, kOp, kEnd } kind;
  std::string text;
  int64_t i = 0;
  double f = 0;
};

std::vector<Tok> tokenize(const std::string& s, int line);

}  // namespace nbits::jinja::detail
