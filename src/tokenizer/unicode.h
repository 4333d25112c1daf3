// Unicode helpers for the tokenizer: UTF-8 coding, general categories, NFC, case folding.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nbits::tok {

// General categories, in the order tools/gen_unicode_tables.py writes them.
enum class Gc : uint8_t {
  Cn,
  Lu,
  Ll,
  Lt,
  Lm,
  Lo,
  Mn,
  Mc,
  Me,
  Nd,
  Nl,
  No,
  Pc,
  Pd,
  Ps,
  Pe,
  Pi,
  Pf,
  Po,
  Sm,
  Sc,
  Sk,
  So,
  Zs,
  Zl,
  Zp,
  Cc,
  Cf,
  Cs,
  Co
};

// General category of a code point (Cn for unassigned or out of range).
Gc general_category(uint32_t cp);
inline bool is_letter(uint32_t cp) {
  if (cp < 0x80) return ((cp | 0x20) - 'a') < 26;
  Gc g = general_category(cp);
  return g >= Gc::Lu && g <= Gc::Lo;
}
inline bool is_number(uint32_t cp) {
  if (cp < 0x80) return cp - '0' < 10;
  Gc g = general_category(cp);
  return g >= Gc::Nd && g <= Gc::No;
}
// Unicode White_Space property (what \s matches).
bool is_whitespace(uint32_t cp);
// Simple case folding (CaseFolding.txt statuses C and S).
uint32_t case_fold(uint32_t cp);
// Canonical combining class.
uint8_t combining_class(uint32_t cp);

// Decodes UTF-8 to code points. Each maximal invalid subsequence becomes U+FFFD (the
// Unicode "maximal subpart" rule, as Rust's String::from_utf8_lossy and JS TextDecoder).
std::vector<uint32_t> decode_utf8(std::string_view s);
// Same rule, UTF-8 to UTF-8; returns the input unchanged when it is valid.
std::string sanitize_utf8(std::string_view s);
// Decodes one sequence at s[i] (i < s.size()): returns its length and sets cp; an invalid
// maximal subpart gives cp = U+FFFD, and truncated tells it was cut short by the end of s.
size_t utf8_step(std::string_view s, size_t i, uint32_t& cp, bool& truncated);
// Whether s is entirely valid UTF-8.
bool utf8_is_valid(std::string_view s);
// Length of the valid UTF-8 sequence starting at s[i]; 0 if invalid there (or truncated).
size_t utf8_valid_len(std::string_view s, size_t i);
void append_utf8(std::string& out, uint32_t cp);
std::string encode_utf8(const std::vector<uint32_t>& cps);

// Unicode Normalization Form C.
std::string nfc(std::string_view s);

}  // namespace nbits::tok
