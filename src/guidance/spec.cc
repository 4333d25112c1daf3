// Guidance specs: the type names every front end takes (onnxruntime-genai's set_guidance names).
#include "base/error.h"
#include "guidance/guidance.h"

namespace nbits::guidance {

Spec make_spec(std::string_view type, std::string data) {
  Spec s;
  if (type == "json_schema" || type == "json")
    s.kind = Kind::kJsonSchema;
  else if (type == "json_object")
    s.kind = Kind::kJsonObject;
  else if (type == "regex")
    s.kind = Kind::kRegex;
  else if (type == "lark")
    s.kind = Kind::kLark;
  else
    throw Error("guidance type must be json_schema, json_object, regex or lark (got \"" + std::string(type) +
                "\")");
  NBITS_CHECK(s.kind == Kind::kJsonObject || !data.empty(), "guidance ", kind_name(s.kind), ": no ",
              s.kind == Kind::kJsonSchema ? "schema"
              : s.kind == Kind::kRegex    ? "regex"
                                          : "grammar",
              " given");
  if (s.kind != Kind::kJsonObject) s.data = std::move(data);
  return s;
}

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kJsonSchema:
      return "json_schema";
    case Kind::kJsonObject:
      return "json_object";
    case Kind::kRegex:
      return "regex";
    case Kind::kLark:
      return "lark";
  }
  return "?";
}

}  // namespace nbits::guidance
