#include "cli/scoring.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "base/error.h"
#include "base/mapped_file.h"
#include "cli/common.h"

namespace nbits::cli {

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
