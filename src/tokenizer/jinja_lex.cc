// The Jinja lexer and expression tokenizer (jinja_lex.h).
#include "tokenizer/jinja_lex.h"

#include <algorithm>
#include <cstdlib>

#include "base/error.h"
#include "tokenizer/unicode.h"

namespace nbits::jinja::detail {

[[noreturn]] void error_at(int line, const std::string& what) {
  fail("chat template line ", line, ": ", what);
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// ---------------------------------------------------------------------------------------------
// Lexer: template text -> segments (text / {{ expr }} / {% stmt %}), whitespace control applied.

int line_of(std::string_view src, size_t pos) {
  return 1 + static_cast<int>(std::count(src.begin(), src.begin() + static_cast<ptrdiff_t>(pos), '\n'));
}

std::vector<Segment> lex(std::string_view src) {
  std::vector<Segment> out;
  size_t pos = 0;
  while (pos < src.size()) {
    size_t idx = pos;
    for (;;) {
      idx = src.find('{', idx);
      if (idx == std::string_view::npos || idx + 1 >= src.size()) {
        idx = std::string_view::npos;
        break;
      }
      char c = src[idx + 1];
      if (c == '{' || c == '%' || c == '#') break;
      ++idx;
    }
    std::string text(src.substr(pos, idx == std::string_view::npos ? std::string_view::npos : idx - pos));
    if (idx == std::string_view::npos) {
      out.push_back({Segment::kText, text, line_of(src, pos)});
      break;
    }
    char kind = src[idx + 1];
    size_t inner = idx + 2;
    bool strip_left = inner < src.size() && src[inner] == '-';
    bool plus_left = inner < src.size() && src[inner] == '+';
    if (strip_left || plus_left) ++inner;
    // Find the closing delimiter, skipping string literals.
    const char close0 = kind == '{' ? '}' : kind;
    size_t end = inner;
    char quote = 0;
    for (; end + 1 < src.size(); ++end) {
      char c = src[end];
      if (quote) {
        if (c == '\\')
          ++end;
        else if (c == quote)
          quote = 0;
        continue;
      }
      if (kind != '#' && (c == '\'' || c == '"')) {
        quote = c;
        continue;
      }
      if (c == close0 && src[end + 1] == '}') break;
    }
    if (end + 1 >= src.size()) error_at(line_of(src, idx), "unterminated tag");
    bool strip_right = end > inner && src[end - 1] == '-';
    bool plus_right = end > inner && src[end - 1] == '+';
    size_t inner_end = (strip_right || plus_right) ? end - 1 : end;
    bool block_like = kind == '%' || kind == '#';
    if (strip_left) {
      while (!text.empty() && is_space(text.back())) text.pop_back();
    } else if (block_like && !plus_left) {  // lstrip_blocks
      size_t nl = text.rfind('\n');
      size_t from = nl == std::string::npos ? 0 : nl + 1;
      bool at_line_start = nl != std::string::npos || pos == 0 || src[pos - 1] == '\n';
      if (at_line_start && text.find_first_not_of(" \t", from) == std::string::npos) text.erase(from);
    }
    if (!text.empty()) out.push_back({Segment::kText, text, line_of(src, pos)});
    if (kind != '#')
      out.push_back({kind == '{' ? Segment::kVar : Segment::kBlock,
                     std::string(src.substr(inner, inner_end - inner)), line_of(src, idx)});
    pos = end + 2;
    if (strip_right) {
      while (pos < src.size() && is_space(src[pos])) ++pos;
    } else if (block_like && !plus_right) {  // trim_blocks
      if (pos < src.size() && src[pos] == '\n')
        ++pos;
      else if (pos + 1 < src.size() && src[pos] == '\r' && src[pos + 1] == '\n')
        pos += 2;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Expression tokens.

std::vector<Tok> tokenize(const std::string& s, int line) {
  std::vector<Tok> out;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (is_space(c)) {
      ++i;
      continue;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      out.push_back({Tok::kName, s.substr(i, j - i)});
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      bool is_float = j + 1 < s.size() && s[j] == '.' && std::isdigit(static_cast<unsigned char>(s[j + 1]));
      if (is_float) {
        ++j;
        while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      }
      std::string num = s.substr(i, j - i);
      num.erase(std::remove(num.begin(), num.end(), '_'), num.end());
      Tok t{is_float ? Tok::kFloat : Tok::kInt, num};
      if (is_float)
        t.f = std::strtod(num.c_str(), nullptr);
      else if (num.size() > 18)
        error_at(line, "integer literal too large");
      else
        t.i = std::stoll(num);
      out.push_back(t);
      i = j;
    } else if (c == '\'' || c == '"') {
      std::string v;
      size_t j = i + 1;
      for (; j < s.size() && s[j] != c; ++j) {
        if (s[j] != '\\' || j + 1 >= s.size()) {
          v += s[j];
          continue;
        }
        char e = s[++j];
        switch (e) {
          case 'n':
            v += '\n';
            break;
          case 't':
            v += '\t';
            break;
          case 'r':
            v += '\r';
            break;
          case '\\':
            v += '\\';
            break;
          case '\'':
            v += '\'';
            break;
          case '"':
            v += '"';
            break;
          case '0':
            v += '\0';
            break;
          case 'u':
          case 'U':
          case 'x': {
            size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            if (j + digits >= s.size()) error_at(line, "malformed escape in string literal");
            uint32_t cp = static_cast<uint32_t>(std::stoul(s.substr(j + 1, digits), nullptr, 16));
            tok::append_utf8(v, cp);
            j += digits;
            break;
          }
          default:
            v += '\\', v += e;
        }
      }
      if (j >= s.size()) error_at(line, "unterminated string literal");
      out.push_back({Tok::kString, v});
      i = j + 1;
    } else {
      static const char* ops[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<",
                                  ">",  "(",  ")",  "[",  "]",  "{",  "}", ".", ",", ":", "|", "="};
      bool found = false;
      for (const char* op : ops) {
        size_t n = std::char_traits<char>::length(op);
        if (s.compare(i, n, op) == 0) {
          out.push_back({Tok::kOp, op});
          i += n;
          found = true;
          break;
        }
      }
      if (!found) error_at(line, std::string("unexpected character '") + c + "'");
    }
  }
  out.push_back({Tok::kEnd, ""});
  return out;
}

}  // namespace nbits::jinja::detail
