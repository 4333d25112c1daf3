// Unicode helpers: UTF-8 coding with the maximal-subpart rule, table lookups, NFC.
#include "tokenizer/unicode.h"

#include <algorithm>

#include "tokenizer/unicode_tables.h"

namespace nbits::tok {
namespace {

constexpr uint32_t kReplacement = 0xFFFD;
constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr uint32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
                   kSCount = kLCount * kNCount;

// Decodes one sequence at s[i]: returns its length (>= 1) and sets cp (U+FFFD when invalid,
// the length then being that of the maximal invalid subpart).
size_t step(std::string_view s, size_t i, uint32_t& cp, bool* truncated = nullptr) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  uint8_t c0 = b(i);
  if (c0 < 0x80) {
    cp = c0;
    return 1;
  }
  size_t need;
  uint8_t lo = 0x80, hi = 0xBF;
  if (c0 >= 0xC2 && c0 <= 0xDF) {
    need = 1;
    cp = c0 & 0x1F;
  } else if (c0 >= 0xE0 && c0 <= 0xEF) {
    need = 2;
    cp = c0 & 0x0F;
    if (c0 == 0xE0) lo = 0xA0;
    if (c0 == 0xED) hi = 0x9F;
  } else if (c0 >= 0xF0 && c0 <= 0xF4) {
    need = 3;
    cp = c0 & 0x07;
    if (c0 == 0xF0) lo = 0x90;
    if (c0 == 0xF4) hi = 0x8F;
  } else {
    cp = kReplacement;
    return 1;
  }
  size_t k = 1;
  for (; k <= need; ++k) {
    if (i + k >= s.size()) break;
    uint8_t c = b(i + k);
    if (c < lo || c > hi) break;
    lo = 0x80;
    hi = 0xBF;
    cp = (cp << 6) | (c & 0x3F);
  }
  if (k <= need) {
    if (truncated) *truncated = i + k >= s.size();
    cp = kReplacement;
    return k;
  }
  return k;
}

uint8_t lookup2(const uint16_t* s1, const uint8_t* s2, uint32_t cp) {
  if (cp >= 0x110000) return 0;
  return s2[static_cast<size_t>(s1[cp >> 8]) * 256 + (cp & 0xFF)];
}

// Full canonical decomposition of cp appended to out.
void decompose(uint32_t cp, std::vector<uint32_t>& out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    uint32_t si = cp - kSBase;
    out.push_back(kLBase + si / kNCount);
    out.push_back(kVBase + (si % kNCount) / kTCount);
    if (si % kTCount) out.push_back(kTBase + si % kTCount);
    return;
  }
  if (cp < 0xC0) {
    out.push_back(cp);
    return;
  }
  const uint32_t* end = tables::decomp_cp + tables::decomp_count;
  const uint32_t* it = std::lower_bound(tables::decomp_cp, end, cp);
  if (it == end || *it != cp) {
    out.push_back(cp);
    return;
  }
  size_t k = static_cast<size_t>(it - tables::decomp_cp);
  for (uint32_t j = tables::decomp_offset[k]; j < tables::decomp_offset[k + 1]; ++j)
    out.push_back(tables::decomp_data[j]);
}

// Primary composite of (a, b), or 0.
uint32_t compose(uint32_t a, uint32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase &&
      b < kTBase + kTCount)
    return a + (b - kTBase);
  uint64_t key = (static_cast<uint64_t>(a) << 32) | b;
  const uint64_t* end = tables::comp_key + tables::comp_count;
  const uint64_t* it = std::lower_bound(tables::comp_key, end, key);
  if (it == end || *it != key) return 0;
  return tables::comp_value[it - tables::comp_key];
}

}  // namespace

Gc general_category(uint32_t cp) {
  return static_cast<Gc>(lookup2(tables::gc_stage1, tables::gc_stage2, cp));
}

uint8_t combining_class(uint32_t cp) { return lookup2(tables::ccc_stage1, tables::ccc_stage2, cp); }

bool is_whitespace(uint32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= 9 && cp <= 13);
  for (size_t i = 0; i < tables::white_space_count; ++i)
    if (cp >= tables::white_space[i][0] && cp <= tables::white_space[i][1]) return true;
  return false;
}

uint32_t case_fold(uint32_t cp) {
  if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
  const uint32_t* end = tables::fold_from + tables::fold_count;
  const uint32_t* it = std::lower_bound(tables::fold_from, end, cp);
  if (it == end || *it != cp) return cp;
  return tables::fold_to[it - tables::fold_from];
}

size_t utf8_step(std::string_view s, size_t i, uint32_t& cp, bool& truncated) {
  truncated = false;
  return step(s, i, cp, &truncated);
}

bool utf8_is_valid(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t n = utf8_valid_len(s, i);
    if (!n) return false;
    i += n;
  }
  return true;
}

size_t utf8_valid_len(std::string_view s, size_t i) {
  uint32_t cp;
  size_t n = step(s, i, cp);
  return (cp == kReplacement && !(n == 3 && static_cast<uint8_t>(s[i]) == 0xEF)) ? 0 : n;
}

std::vector<uint32_t> decode_utf8(std::string_view s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    uint32_t cp;
    i += step(s, i, cp);
    out.push_back(cp);
  }
  return out;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string encode_utf8(const std::vector<uint32_t>& cps) {
  std::string out;
  out.reserve(cps.size());
  for (uint32_t cp : cps) append_utf8(out, cp);
  return out;
}

std::string sanitize_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && static_cast<uint8_t>(s[i]) < 0x80) ++i;
  std::string out(s.substr(0, i));
  for (; i < s.size();) {
    uint32_t cp;
    size_t n = step(s, i, cp);
    if (cp == kReplacement)
      append_utf8(out, cp);
    else
      out.append(s.substr(i, n));
    i += n;
  }
  return out;
}

std::string nfc(std::string_view s) {
  // Fast path: code points below U+0300 are unchanged by NFC and never combine with what precedes.
  bool simple = true;
  for (unsigned char c : s)
    if (c >= 0xCC) {
      simple = false;
      break;
    }
  if (simple) return std::string(s);
  std::vector<uint32_t> cps = decode_utf8(s);
  std::vector<uint32_t> d;
  d.reserve(cps.size() + 8);
  for (uint32_t cp : cps) decompose(cp, d);
  // Canonical ordering: stable sort of each run of non-starters by combining class.
  for (size_t i = 0; i < d.size();) {
    if (combining_class(d[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < d.size() && combining_class(d[j]) != 0) ++j;
    std::stable_sort(d.begin() + static_cast<ptrdiff_t>(i), d.begin() + static_cast<ptrdiff_t>(j),
                     [](uint32_t a, uint32_t b) { return combining_class(a) < combining_class(b); });
    i = j;
  }
  // Canonical composition.
  std::vector<uint32_t> out;
  out.reserve(d.size());
  ptrdiff_t starter = -1;
  int last_ccc = -1;
  for (uint32_t cp : d) {
    int ccc = combining_class(cp);
    if (starter >= 0) {
      bool blocked = last_ccc != -1 && (last_ccc == 0 || last_ccc >= ccc);
      if (!blocked) {
        uint32_t c = compose(out[static_cast<size_t>(starter)], cp);
        if (c) {
          out[static_cast<size_t>(starter)] = c;
          continue;
        }
      }
    }
    if (ccc == 0) {
      starter = static_cast<ptrdiff_t>(out.size());
      last_ccc = -1;
    } else {
      last_ccc = ccc;
    }
    out.push_back(cp);
  }
  return encode_utf8(out);
}

}  // namespace nbits::tok
