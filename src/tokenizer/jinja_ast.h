// Jinja subset: the syntax tree the parser builds and the renderer walks. Internal.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/jinja_value.h"

namespace nbits::jinja::detail {

// ---------------------------------------------------------------------------------------------
// AST.

struct Expr;
using ExprP = std::unique_ptr<Expr>;
struct Expr {
  enum Kind {
    kLit,
    kName,
    kAttr,
    kIndex,
    kSlice,
    kCall,
    kFilter,
    kTest,
    kNeg,
    kNot,
    kBin,
    kAnd,
    kOr,
    kCond,
    kList,
    kDict
  } kind;
  Value lit;
  std::string name;     // kName, kAttr, kFilter/kTest name, kBin operator
  bool negate = false;  // kTest: is not
  std::vector<ExprP> kids;
  std::vector<std::string> kw;  // kCall/kFilter/kTest: names of the trailing keyword arguments
  int line = 0;
};

// kSet without a value (`{% set x %}...{% endset %}`) assigns its rendered body; kMacro defines
// `text` as a function of `vars` (defaults in `defaults`, null where none) rendering `body`;
// kFilterBlock renders `body` and applies filter `text` (arguments in `defaults`); kBlock renders
// `body` (transformers' `{% generation %}`).
struct Node {
  enum Kind { kText, kOut, kIf, kFor, kSet, kBreak, kContinue, kMacro, kFilterBlock, kBlock } kind = kText;
  std::string text;
  ExprP expr;                                                 // kOut; kFor iterable; kSet value
  std::vector<std::pair<ExprP, std::vector<Node>>> branches;  // kIf (null cond = else)
  std::vector<std::string> vars;  // kFor loop variables; kSet names (or {name, attr}); kMacro parameters
  std::vector<ExprP> defaults;    // kMacro parameter defaults; kFilterBlock arguments
  bool set_attr = false;
  ExprP filter;  // kFor inline if
  std::vector<Node> body, else_body;
  int line = 0;
};

// Parses a whole template (jinja_parse.cc); throws nbits::Error naming the construct and line.
std::vector<Node> parse(std::string_view source);

// Renders parsed nodes with the given variables (jinja_render.cc); now_utc as Template::render's.
std::string render(const std::vector<Node>& nodes, const nlohmann::ordered_json& context, int64_t now_utc);

}  // namespace nbits::jinja::detail
