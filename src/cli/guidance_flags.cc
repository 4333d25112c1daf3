#include "cli/guidance_flags.h"

#include <string>
#include <vector>

#include "base/error.h"
#include "base/mapped_file.h"

namespace nbits::cli {

void add_guidance_flags(Flags& f) {
  f.str("--json-schema", "FILE",
        "constrained output: the reply is JSON matching this schema (a file, or the schema itself\n"
        "                             when it starts with '{')");
  f.flag("--json", "constrained output: the reply is a JSON object");
  f.str("--regex", "R", "constrained output: the reply matches this regular expression (Rust syntax)");
  f.str("--grammar", "FILE",
        "constrained output: the reply follows this Lark grammar (llguidance's dialect)");
}

GuidanceFlags::GuidanceFlags(const Flags& f, const ModelSetup& m) {
  std::vector<std::string> given;
  for (const char* name : {"--json-schema", "--json", "--regex", "--grammar"})
    if (f.given(name)) given.push_back(name);
  if (given.empty()) return;
  NBITS_CHECK(given.size() == 1, given[0], " and ", given[1], " are two constraints: give one");
  if (f.given("--json-schema")) {
    std::string s = f.get_str("--json-schema");
    const size_t b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos || s[b] != '{') s = read_text_file(s);
    spec_ = guidance::make_spec("json_schema", std::move(s));
  } else if (f.given("--json")) {
    spec_ = guidance::make_spec("json_object", "");
  } else if (f.given("--regex")) {
    spec_ = guidance::make_spec("regex", f.get_str("--regex"));
  } else {
    spec_ = guidance::make_spec("lark", read_text_file(f.get_str("--grammar")));
  }
  NBITS_CHECK(m.tokenizer != nullptr, given[0], " needs the model's tokenizer (give -p, not --ids)");
  const llm::GenaiConfig& c = m.generator->config();
  const std::vector<int32_t> eos(c.eos_token_ids.begin(), c.eos_token_ids.end());
  vocab_ = guidance::make_vocabulary(*m.tokenizer, m.generator->vocab_size(), eos);
  const std::string why = guidance::check(*vocab_, spec_);
  NBITS_CHECK(why.empty(), given[0], ": ", why);
}

std::shared_ptr<llm::TokenConstraint> GuidanceFlags::constraint() const {
  if (!vocab_) return nullptr;
  return guidance::make_constraint(vocab_, spec_);
}

}  // namespace nbits::cli
