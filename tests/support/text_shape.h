// A stand-in for std::regex in tests (libstdc++ 12's <regex> trips -Werror=maybe-uninitialized in
// the -O1 sanitizer build): whether a text has a pattern's shape, '9' for any ASCII digit, 'a' for
// any of a-z, every other character itself.
#pragma once

#include <initializer_list>
#include <string_view>

namespace nbits::testing {

inline bool has_shape(std::string_view text, std::string_view pattern) {
  if (text.size() != pattern.size()) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char t = text[i], p = pattern[i];
    if (p == '9' ? !(t >= '0' && t <= '9') : p == 'a' ? !(t >= 'a' && t <= 'z') : t != p) return false;
  }
  return true;
}

inline bool has_any_shape(std::string_view text, std::initializer_list<std::string_view> patterns) {
  for (std::string_view p : patterns)
    if (has_shape(text, p)) return true;
  return false;
}

}  // namespace nbits::testing
