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
  add_guidance_limit_flags(f);
}

void add_guidance_limit_flags(Flags& f) {
  f.f64("--guidance-mask-ms", "MS",
        "constrained output: the work one token's mask may take, in ms at the engine's rated speed\n"
        "                             (default: llguidance's, about 14); a spec that needs more fails with\n"
        "                             a clear error",
        std::nullopt, 0.001, 1e6);
  f.i64("--guidance-grammar-size", "N",
        "constrained output: the most symbols a schema or grammar may compile to (default: 500000)",
        std::nullopt, 1, int64_t{1} << 40);
}

guidance::Limits guidance_limits(const Flags& f) {
  guidance::Limits l;
  if (f.given("--guidance-mask-ms")) l.mask_ms = f.get_f64("--guidance-mask-ms");
  if (f.given("--guidance-grammar-size")) l.grammar_size = f.get_i64("--guidance-grammar-size");
  return l;
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
  vocab_ = guidance::make_vocabulary(*m.tokenizer, m.generator->vocab_size(), eos, guidance_limits(f));
  const std::string why = guidance::check(*vocab_, spec_);
  NBITS_CHECK(why.empty(), given[0], ": ", why);
}

std::shared_ptr<llm::TokenConstraint> GuidanceFlags::constraint() const {
  if (!vocab_) return nullptr;
  return guidance::make_constraint(vocab_, spec_);
}

}  // namespace nbits::cli
