#include "cli/scoring.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "base/error.h"
#include "base/mapped_file.h"
#include "cli/common.h"

namespace nbits::cli {

double log_sum_exp(std::span<const float> logits) {
  NBITS_CHECK(!logits.empty(), "log_sum_exp of no logits");
  float mx = logits[0];
  for (float x : logits) mx = std::max(mx, x);
  double sum = 0;
  for (float x : logits) sum += std::exp(static_cast<double>(x) - mx);
  return mx + std::log(sum);
}

std::vector<TokenLogprob> top_logprobs(std::span<const float> logits, int64_t k, double lse) {
  const auto n = static_cast<int64_t>(logits.size());
  k = std::clamp<int64_t>(k, 0, n);
  std::vector<int32_t> idx(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) idx[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  auto better = [&](int32_t a, int32_t b) {
    const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
    return la != lb ? la > lb : a < b;
  };
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), better);
  std::vector<TokenLogprob> out;
  out.reserve(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) {
    const int32_t id = idx[static_cast<size_t>(i)];
    out.push_back({id, static_cast<double>(logits[static_cast<size_t>(id)]) - lse});
  }
  return out;
}

std::vector<int32_t> parse_id_list(const std::string& spec, const std::string& what) {
  std::string text = spec;
  if (!spec.empty() && spec[0] == '@') {
    const std::string path = spec.substr(1);
    NBITS_CHECK(file_exists(path), what, ": file '", printable(path), "' does not exist");
    text = read_text_file(path);
    for (char& c : text)
      if (c == ' ' || c == '\n' || c == '\t' || c == '\r') c = ',';
    // Separators may repeat (",\n", trailing newline): drop empty items.
    std::string squeezed;
    for (char c : text)
      if (c != ',' || (!squeezed.empty() && squeezed.back() != ',')) squeezed.push_back(c);
    if (!squeezed.empty() && squeezed.back() == ',') squeezed.pop_back();
    text = squeezed;
  }
  NBITS_CHECK(!text.empty(), what, ": no token ids given");
  auto list = parse_int_list(text);
  NBITS_CHECK(list.has_value(), what, ": not a comma-separated list of token ids: '",
              printable(text.substr(0, 80)), "'");
  std::vector<int32_t> ids;
  for (int64_t id : *list) {
    NBITS_CHECK(id >= 0 && id <= INT32_MAX, what, ": token id ", id, " is out of range");
    ids.push_back(static_cast<int32_t>(id));
  }
  return ids;
}

}  // namespace nbits::cli
