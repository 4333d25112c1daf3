#include "cli/kernel_report.h"

#include "kernels/kernel_choice.h"

namespace nbits::cli {

nlohmann::ordered_json kernel_choice_json() {
  nlohmann::ordered_json r = nlohmann::ordered_json::array();
  for (const auto& c : kernels::kernel_choices()) {
    nlohmann::ordered_json cands = nlohmann::ordered_json::array();
    for (size_t i = 0; i < c.names.size(); ++i) {
      nlohmann::ordered_json x = {{"name", c.names[i]}};
      if (i < c.us.size()) x["us"] = c.us[i];
      cands.push_back(x);
    }
    r.push_back({{"key", c.key}, {"chosen", c.names[c.chosen]}, {"why", c.why}, {"candidates", cands}});
  }
  return r;
}

void print_kernel_choices(std::FILE* out) {
  const std::string s = kernels::describe_kernel_choices();
  if (s.empty()) return;
  std::fprintf(out, "kernel choice (per role and packed format; %s):\n",
               kernels::kernel_choice_file().empty() ? "no cache file"
                                                     : ("cache " + kernels::kernel_choice_file()).c_str());
  size_t start = 0;
  while (start < s.size()) {
    const size_t nl = s.find('\n', start);
    std::fprintf(out, "  %s\n", s.substr(start, nl - start).c_str());
    start = nl == std::string::npos ? s.size() : nl + 1;
  }
}

}  // namespace nbits::cli
