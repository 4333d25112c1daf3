// Minimal JSON scanner (see json_scan.h).
#include "tokenizer/json_scan.h"

#include "base/error.h"
#include "tokenizer/unicode.h"

namespace nbits::tok {

void JsonScan::bad(const std::string& what) const {
  fail(origin_, ": invalid JSON at byte ", i_, ": ", what);
}

void JsonScan::ws() {
  while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) ++i_;
}

bool JsonScan::peek(char c) {
  ws();
  return i_ < s_.size() && s_[i_] == c;
}

bool JsonScan::eat(char c) {
  if (!peek(c)) return false;
  ++i_;
  return true;
}

void JsonScan::expect(char c) {
  if (!eat(c)) bad(std::string("expected '") + c + "'");
}

static int hex4(std::string_view s, size_t i) {
  if (i + 4 > s.size()) return -1;
  int v = 0;
  for (size_t k = i; k < i + 4; ++k) {
    char c = s[k];
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

std::string JsonScan::string() {
  std::string out;
  string_into(out);
  return out;
}

void JsonScan::string_into(std::string& out) {
  expect('"');
  out.clear();
  size_t run = i_;
  for (;;) {
    if (i_ >= s_.size()) bad("unterminated string");
    char c = s_[i_];
    if (c == '"') {
      out.append(s_, run, i_ - run);
      ++i_;
      return;
    }
    if (static_cast<unsigned char>(c) < 0x20) bad("control character in string");
    if (c != '\\') {
      ++i_;
      continue;
    }
    out.append(s_, run, i_ - run);
    if (++i_ >= s_.size()) bad("unterminated escape");
    char e = s_[i_++];
    switch (e) {
      case '"':
        out += '"';
        break;
      case '\\':
        out += '\\';
        break;
      case '/':
        out += '/';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        int v = hex4(s_, i_);
        if (v < 0) bad("malformed \\u escape");
        i_ += 4;
        uint32_t cp = static_cast<uint32_t>(v);
        if (cp >= 0xD800 && cp < 0xDC00) {
          int lo = (i_ + 1 < s_.size() && s_[i_] == '\\' && s_[i_ + 1] == 'u') ? hex4(s_, i_ + 2) : -1;
          if (lo < 0xDC00 || lo > 0xDFFF) bad("lone surrogate in \\u escape");
          i_ += 6;
          cp = 0x10000 + ((cp - 0xD800) << 10) + (static_cast<uint32_t>(lo) - 0xDC00);
        } else if (cp >= 0xDC00 && cp < 0xE000) {
          bad("lone surrogate in \\u escape");
        }
        append_utf8(out, cp);
        break;
      }
      default:
        bad("unknown escape");
    }
    run = i_;
  }
}

long long JsonScan::integer() {
  ws();
  size_t start = i_;
  bool neg = i_ < s_.size() && s_[i_] == '-';
  if (neg) ++i_;
  long long v = 0;
  size_t digits = 0;
  while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
    if (++digits > 15) bad("integer too large");
    v = v * 10 + (s_[i_++] - '0');
  }
  if (!digits) {
    i_ = start;
    bad("expected an integer");
  }
  if (i_ < s_.size() && (s_[i_] == '.' || s_[i_] == 'e' || s_[i_] == 'E')) bad("expected an integer");
  return neg ? -v : v;
}

std::string_view JsonScan::skip() {
  ws();
  size_t start = i_;
  int depth = 0;
  do {
    ws();
    if (i_ >= s_.size()) bad("unexpected end");
    char c = s_[i_];
    if (c == '"') {
      string();
    } else if (c == '{' || c == '[') {
      ++depth;
      ++i_;
    } else if (c == '}' || c == ']') {
      if (--depth < 0) bad("unbalanced bracket");
      ++i_;
    } else if (c == ',' || c == ':') {
      if (depth == 0) bad("unexpected separator");
      ++i_;
    } else {
      size_t b = i_;
      while (i_ < s_.size() && s_[i_] != ',' && s_[i_] != '}' && s_[i_] != ']' && s_[i_] != ' ' &&
             s_[i_] != '\n' && s_[i_] != '\r' && s_[i_] != '\t' && s_[i_] != ':')
        ++i_;
      if (i_ == b) bad("unexpected character");
    }
  } while (depth > 0);
  return s_.substr(start, i_ - start);
}

}  // namespace nbits::tok
