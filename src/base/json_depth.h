// Structure of a JSON text without parsing it: how deeply it nests, and where its first value
// ends, from one scanner of { [ ] } outside strings (no allocation).
// nlohmann::ordered_json parses deep nesting in quadratic time (a 5000-deep schema: 37 s, against
// 0.02 s for nlohmann::json), so text from a client or a model is measured before it is parsed
// ordered; llguidance refuses schemas nested deeper than serde_json's 128 levels anyway.
#pragma once

#include <cstddef>
#include <string_view>

namespace nbits {

namespace detail {
// Calls on_depth(i, depth) after each bracket at text[i] outside strings (depth after it); stops
// when it returns false.
template <typename F>
void scan_json_brackets(std::string_view text, F&& on_depth) {
  size_t depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (!on_depth(i, ++depth)) return;
    } else if ((c == '}' || c == ']') && depth > 0) {
      if (!on_depth(i, --depth)) return;
    }
  }
}
}  // namespace detail

// The deepest nesting of text (0 for a scalar); it stops counting once past `limit`.
inline size_t json_nesting_depth(std::string_view text, size_t limit = static_cast<size_t>(-1)) {
  size_t deepest = 0;
  detail::scan_json_brackets(text, [&](size_t, size_t depth) {
    if (depth > deepest) deepest = depth;
    return deepest <= limit;
  });
  return deepest;
}

// One past the bracket that closes the first object or array of text, or 0 when none closes.
inline size_t json_first_value_end(std::string_view text) {
  size_t end = 0;
  detail::scan_json_brackets(text, [&](size_t i, size_t depth) {
    if (depth == 0) end = i + 1;
    return depth != 0;
  });
  return end;
}

// JSON nested deeper than this is not parsed as ordered_json (see above).
constexpr size_t kMaxOrderedJsonDepth = 128;

}  // namespace nbits
