#include "speculative/prompt_lookup.h"

#include <algorithm>

#include "base/error.h"

namespace nbits::speculative {

PromptLookup::PromptLookup(int64_t min_ngram, int64_t max_ngram)
    : min_ngram_(min_ngram), max_ngram_(max_ngram) {
  NBITS_CHECK(min_ngram >= 1 && min_ngram <= max_ngram, "prompt lookup n-gram sizes must be 1 <= min (",
              min_ngram, ") <= max (", max_ngram, ")");
}

void PromptLookup::propose(std::span<const int32_t> context, int64_t max_tokens, std::vector<int32_t>& out) {
  out.clear();
  const auto len = static_cast<int64_t>(context.size());
  if (max_tokens <= 0) return;
  for (int64_t n = std::min(max_ngram_, len - 1); n >= min_ngram_; --n) {
    const int32_t* key = context.data() + len - n;
    // The latest earlier occurrence: start j < len - n, scanned backwards.
    for (int64_t j = len - n - 1; j >= 0; --j) {
      if (context[static_cast<size_t>(j)] != key[0] || !std::equal(key, key + n, context.data() + j))
        continue;
      const int64_t from = j + n, to = std::min(len, from + max_tokens);
      out.assign(context.begin() + from, context.begin() + to);
      return;
    }
  }
}

}  // namespace nbits::speculative
