// Chat templates with tools (transformers' apply_chat_template(tools=...)), assistant tool_calls and
// role "tool" messages: nbits' Jinja renderer gives transformers' text on every case of
// tests/tokenizer/data/tool_chat_refs.json (tools/tokenizer/make_tool_chat_refs.py), key order kept.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "support/shared_data.h"
#include "support/source_dir.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

namespace nbits {
namespace {

using ojson = nlohmann::ordered_json;

TEST(ToolChat, TemplatesRenderToolsAndCallsAsTransformers) {
  const ojson doc = ojson::parse(
      read_text_file(std::string(testing::source_dir()) + "/tests/tokenizer/data/tool_chat_refs.json"));
  int n = 0;
  for (const ojson& c : doc["cases"]) {
    const std::string dir = testing::shared_path("tokenizers/" + c["tokenizer"].get<std::string>());
    NBITS_REQUIRE_SHARED(dir + "/tokenizer.json");
    const Tokenizer tok = Tokenizer::load(dir);
    std::vector<ChatMessage> msgs;
    for (const ojson& m : c["messages"]) {
      ChatMessage cm{m["role"], m["content"]};
      if (m.contains("tool_calls"))
        for (const ojson& tc : m["tool_calls"])
          cm.tool_calls.push_back({tc["id"], tc["function"]["name"], tc["function"]["arguments"].dump()});
      if (m.contains("tool_call_id")) cm.tool_call_id = m["tool_call_id"];
      if (m.contains("name")) cm.name = m["name"];
      msgs.push_back(std::move(cm));
    }
    const std::string tools = c["tools"].is_null() ? "" : c["tools"].dump();
    SCOPED_TRACE(c["messages"].dump() + (tools.empty() ? "" : " with tools"));
    EXPECT_EQ(render_chat(tok, msgs, /*add_generation_prompt=*/true, std::nullopt, tools),
              c["text"].get<std::string>());
    ++n;
  }
  EXPECT_EQ(n, 6);
  const Tokenizer tok = Tokenizer::load(testing::shared_path("tokenizers/qwen2.5"));
  EXPECT_THROW(render_chat(tok, {{"user", "x"}}, true, std::nullopt, R"({"not": "an array"})"), Error);
}

}  // namespace
}  // namespace nbits
