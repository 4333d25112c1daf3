// Chat templates: every rendered prompt of the shared cases byte for byte (and its ids), the
// built-in formats against the real templates, and Jinja features/errors.
#include "tokenizer/chat.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "support/shared_data.h"
#include "tokenizer/jinja.h"

namespace nbits {
namespace {

using nlohmann::json;

std::vector<ChatMessage> messages_of(const json& j) {
  std::vector<ChatMessage> r;
  for (const auto& m : j) r.push_back({m["role"], m["content"]});
  return r;
}

void check_chat(const std::string& name, const std::optional<std::string>& builtin) {
  std::string cases_path = testing::shared_path("tokenizers/cases/tokenizer_cases_" + name + ".json");
  NBITS_REQUIRE_SHARED(cases_path);
  Tokenizer tok = Tokenizer::load(testing::shared_path("tokenizers/" + name));
  json doc = json::parse(read_text_file(cases_path));
  ASSERT_GE(doc["chat"].size(), 6u);
  for (const json& c : doc["chat"]) {
    SCOPED_TRACE(name + ": " + c["name"].get<std::string>());
    std::string prompt = render_chat(tok, messages_of(c["messages"]), c["add_generation_prompt"]);
    EXPECT_EQ(prompt, c["prompt"].get<std::string>());
    EXPECT_EQ(tok.encode(prompt, false), c["ids"].get<std::vector<int32_t>>());
    EXPECT_EQ(tok.encode(prompt, true), c["ids_with_special"].get<std::vector<int32_t>>());
    if (builtin) {
      EXPECT_EQ(render_chat(tok, messages_of(c["messages"]), c["add_generation_prompt"], builtin), prompt);
    }
  }
}

TEST(Chat, Qwen25) { check_chat("qwen2.5", "qwen2.5"); }
TEST(Chat, SmolLM2) { check_chat("smollm2", std::nullopt); }
TEST(Chat, TinyLlama) { check_chat("tinyllama", "zephyr"); }

std::string render(const std::string& tmpl, const json& ctx = json::object()) {
  return jinja::Template(tmpl).render(ctx);
}

TEST(Jinja, Expressions) {
  EXPECT_EQ(render("{{ 1 + 2 * 3 }}|{{ 7 // 2 }}|{{ -7 % 3 }}|{{ 'a' ~ 1 }}|{{ 'ab' * 2 }}"),
            "7|3|2|a1|abab");
  EXPECT_EQ(render("{{ [1, 2, 3][1:] }}|{{ 'hello'[::-1] }}|{{ 'héllo'[1] }}"), "[2, 3]|olleh|é");
  EXPECT_EQ(render("{{ x is defined }}|{{ x is not defined }}|{{ none is none }}"), "False|True|True");
  EXPECT_EQ(render("{{ 'b' in 'abc' }}|{{ 2 not in [1, 2] }}|{{ 'k' in {'k': 1} }}"), "True|False|True");
  EXPECT_EQ(render("{{ '  x ' | trim }}|{{ 'Ab' | upper }}{{ 'Ab' | lower }}|{{ [1, 2] | length }}"),
            "x|ABab|2");
  EXPECT_EQ(render("{{ y | default('d') }}|{{ '' | default('e', true) }}|{{ ['a', 'b'] | join('-') }}"),
            "d|e|a-b");
  EXPECT_EQ(render("{{ {'a': [1, 'x', none, true]} | tojson }}"), R"({"a": [1, "x", null, true]})");
  EXPECT_EQ(render("{{ 'yes' if 1 > 2 else 'no' }}|{{ ' a b '.strip().split(' ') }}"), "no|['a', 'b']");
}

TEST(Jinja, Statements) {
  EXPECT_EQ(render("{% for x in xs %}{{ loop.index0 }}{{ x }}{% if not loop.last %},{% endif %}{% endfor %}",
                   {{"xs", {"a", "b"}}}),
            "0a,1b");
  EXPECT_EQ(
      render("{% set ns = namespace(n=0) %}{% for x in [1, 2, 3] %}{% set ns.n = ns.n + x %}{% endfor %}"
             "{{ ns.n }}"),
      "6");
  EXPECT_EQ(render("{% set n = 1 %}{% for x in [1] %}{% set n = 5 %}{% endfor %}{{ n }}"),
            "1");  // loop scope
  EXPECT_EQ(render("{% if a %}A{% elif b %}B{% else %}C{% endif %}", {{"a", false}, {"b", true}}), "B");
  EXPECT_EQ(
      render(
          "{% for x in [1, 2, 3, 4] if x is even %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
      "2");
  EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", {{"d", {{"a", 1}}}}), "a=1;");
  // trim_blocks / lstrip_blocks / whitespace control, as transformers renders.
  EXPECT_EQ(render("  {% if true %}\nx\n  {% endif %}\ny  {{- ' z' }}"), "x\ny z");
}

TEST(Jinja, Errors) {
  EXPECT_THROW(render("{% call m() %}{% endcall %}"), Error);  // macros are supported; call blocks are not
  EXPECT_THROW(render("{{ raise_exception('bad role') }}"), Error);
  EXPECT_THROW(render("{% if x %}unterminated"), Error);
  EXPECT_THROW(render("{{ 1 + }}"), Error);
  EXPECT_THROW(render("{{ x | frobnicate }}"), Error);
  EXPECT_THROW(render("{{ 'a' + 1 }}"), Error);
  EXPECT_THROW(render("{{ x.y }}"), Error);
  try {
    render("line1\n{% include 'x' %}");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("include"), std::string::npos) << e.what();
  }
  EXPECT_THROW(builtin_chat_template("nope"), Error);
}

TEST(Chat, BuiltinLlama2) {
  std::string p = render_chat_template(builtin_chat_template("llama2"),
                                       {{"system", "S"}, {"user", "Hi"}, {"assistant", "Yo"}, {"user", "Q"}},
                                       true, "<s>", "</s>");
  EXPECT_EQ(p, "<s>[INST] <<SYS>>\nS\n<</SYS>>\n\nHi [/INST] Yo </s><s>[INST] Q [/INST]");
  EXPECT_THROW(
      render_chat_template(builtin_chat_template("llama2"), {{"assistant", "x"}}, true, "<s>", "</s>"),
      Error);
  EXPECT_EQ(render_chat_template(builtin_chat_template("chatml"), {{"user", "Hi"}}, true, "", ""),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

}  // namespace
}  // namespace nbits
