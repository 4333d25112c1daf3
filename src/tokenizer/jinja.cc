// Jinja subset interpreter for chat templates (see jinja.h): jinja_lex (text -> segments and
// tokens), jinja_parse (-> syntax tree, jinja_ast.h), jinja_render (tree + variables -> text).
#include "tokenizer/jinja.h"

#include "tokenizer/jinja_ast.h"

namespace nbits::jinja {

struct Template::Impl {
  std::vector<detail::Node> nodes;
};

Template::Template(std::string_view source) : impl_(std::make_unique<Impl>()) {
  impl_->nodes = detail::parse(source);
}
Template::~Template() = default;
Template::Template(Template&&) noexcept = default;

std::string Template::render(const nlohmann::ordered_json& context, int64_t now_utc) const {
  return detail::render(impl_->nodes, context, now_utc);
}

}  // namespace nbits::jinja
