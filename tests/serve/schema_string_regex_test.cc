// A string schema's pattern and format as llguidance regexes over the raw text (the XML tool-call
// form's values): anchors become the match's ends, unanchored sides take any text, \d and \w
// stay ASCII, '/' is escaped for Lark; what cannot be carried over is refused by name.
#include "serve/schema_string_regex.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace nbits::serve {
namespace {

using ojson = nlohmann::ordered_json;

std::vector<std::string> of(const char* schema) { return schema_string_regexes(ojson::parse(schema)); }

TEST(SchemaStringRegex, PatternsKeepTheirSemantics) {
  EXPECT_EQ(of(R"({"type": "string"})"), std::vector<std::string>{});
  EXPECT_EQ(of(R"({"pattern": "^[A-Z]{3}$"})"), std::vector<std::string>{"([A-Z]{3})"});
  EXPECT_EQ(of(R"({"pattern": "abc"})"), std::vector<std::string>{"(?s:.*)(abc)(?s:.*)"});
  EXPECT_EQ(of(R"({"pattern": "^\\d+-\\w$"})"), std::vector<std::string>{"([0-9]+-[0-9A-Za-z_])"});
  EXPECT_EQ(of(R"({"pattern": "^[\\d-]+x\\D$"})"), std::vector<std::string>{"([0-9-]+x[^0-9])"});
  EXPECT_EQ(of(R"({"pattern": "^a/b[/]$"})"), std::vector<std::string>{"(a\\/b[\\/])"});
  EXPECT_EQ(of(R"({"pattern": "^(a|b)c\\$$"})"), std::vector<std::string>{"((a|b)c\\$)"});
  EXPECT_EQ(of(R"({"pattern": "x|y"})"), std::vector<std::string>{"(?s:.*)(x|y)(?s:.*)"});
  EXPECT_EQ(of(R"({"pattern": "^[]a]$"})"), std::vector<std::string>{"([]a])"});
  for (const char* bad : {R"({"pattern": "^a|b$"})", R"({"pattern": "a^b"})", R"({"pattern": "(?=x)y"})",
                          R"({"pattern": "(a)\\1"})"}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(of(bad), Error);
  }
}

TEST(SchemaStringRegex, FormatsWithAShape) {
  ASSERT_EQ(of(R"({"format": "date"})").size(), 1u);
  ASSERT_EQ(of(R"({"format": "date-time", "pattern": "^2"})").size(), 2u);
  for (const char* f : {"time", "uuid", "ipv4", "email", "hostname"}) {
    SCOPED_TRACE(f);
    EXPECT_EQ(of((std::string(R"({"format": ")") + f + "\"}").c_str()).size(), 1u);
  }
  EXPECT_TRUE(of(R"({"format": "uri"})").empty());  // an annotation here
}

}  // namespace
}  // namespace nbits::serve
