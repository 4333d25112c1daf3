// A Jinja2 subset for Hugging Face chat templates, rendered as transformers does
// (trim_blocks and lstrip_blocks on). Supported: {{ }}, {% if/elif/else %}, {% for %} (with
// loop.index/index0/first/last/length/revindex, else, inline if filter), {% set %} (names,
// namespace attributes, tuples; the block form {% set x %}...{% endset %}), {% macro %} (positional,
// keyword and default arguments), {% filter %} blocks, transformers' {% generation %} (renders its
// body), {% break/continue %}, {# #}, whitespace control (-, +);
// expressions with literals, lists, dicts, attribute/subscript/slice, calls, filters, tests
// (is [not] defined/none/string/...), not/and/or, comparisons, in, + - * / // % ~, a if c else b;
// globals raise_exception, namespace, range. Anything else is a clear nbits::Error at parse time.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace nbits::jinja {

class Template {
 public:
  // Parses the template; throws nbits::Error naming the unsupported construct and its line.
  explicit Template(std::string_view source);
  ~Template();
  Template(Template&&) noexcept;
  // Renders with the given variables (a JSON object); throws nbits::Error on a render error
  // (including raise_exception from the template). now_utc: the time strftime_now formats (UTC
  // seconds; -1: the current time), for reproducible renders.
  std::string render(const nlohmann::ordered_json& context, int64_t now_utc = -1) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace nbits::jinja
