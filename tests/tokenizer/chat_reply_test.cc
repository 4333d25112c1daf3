// tokenizer/chat_reply.h: replies split into reasoning, content and (harmony) tool calls, the same
// whether the text comes whole or in pieces of any size.
#include "tokenizer/chat_reply.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace nbits {
namespace {

struct Split {
  std::string reasoning, content;
  std::vector<ToolCall> calls;
};

// The reply fed in pieces of `step` bytes (0: whole).
Split run(ReasoningFormat f, bool in_reasoning, const std::string& text, size_t step) {
  ReplyChannels ch(f, in_reasoning);
  Split s;
  const auto take = [&](ReplyChannels::Piece p) {
    s.reasoning += p.reasoning;
    s.content += p.content;
    s.calls.insert(s.calls.end(), p.calls.begin(), p.calls.end());
  };
  if (step == 0) step = text.size() + 1;
  for (size_t i = 0; i < text.size(); i += step) take(ch.push(text.substr(i, step)));
  take(ch.finish());
  return s;
}

// Every piece size gives the whole text's split.
Split split(ReasoningFormat f, bool in_reasoning, const std::string& text) {
  const Split whole = run(f, in_reasoning, text, 0);
  for (size_t step = 1; step <= 9; ++step) {
    const Split s = run(f, in_reasoning, text, step);
    EXPECT_EQ(s.reasoning, whole.reasoning) << "pieces of " << step;
    EXPECT_EQ(s.content, whole.content) << "pieces of " << step;
    EXPECT_EQ(s.calls.size(), whole.calls.size()) << "pieces of " << step;
  }
  return whole;
}

TEST(Reasoning, FormatsByTemplate) {
  EXPECT_EQ(reasoning_format("{{ '<|start|>assistant<|channel|>final<|message|>' }}"),
            ReasoningFormat::kHarmony);
  EXPECT_EQ(reasoning_format("{% if '</think>' in content %}"), ReasoningFormat::kThink);
  EXPECT_EQ(reasoning_format("<|im_start|>assistant"), ReasoningFormat::kNone);
  EXPECT_TRUE(prompt_opens_think("<|im_start|>assistant\n<think>\n"));
  EXPECT_FALSE(prompt_opens_think("<think>\n\n</think>\n\n"));
  EXPECT_FALSE(prompt_opens_think("<think>\n", ReasoningFormat::kNone));
  // ByteDance Seed-OSS's tags.
  EXPECT_EQ(reasoning_format("{%- set think_end_token = '</seed:think>' -%}"), ReasoningFormat::kSeedThink);
  EXPECT_STREQ(reasoning_format_name(ReasoningFormat::kSeedThink), "seed_think");
  EXPECT_TRUE(prompt_opens_think("assistant\n<seed:think>", ReasoningFormat::kSeedThink));
  EXPECT_FALSE(prompt_opens_think("assistant\n<think>", ReasoningFormat::kSeedThink));
}

TEST(Reasoning, ThinkTags) {
  Split s = split(ReasoningFormat::kThink, false, "<think>\nLet me add.\n</think>\n\n5");
  EXPECT_EQ(s.reasoning, "\nLet me add.\n");
  EXPECT_EQ(s.content, "\n\n5");
  s = split(ReasoningFormat::kThink, true, "2 + 3 is 5.</think>The answer is 5.");  // the prompt opened it
  EXPECT_EQ(s.reasoning, "2 + 3 is 5.");
  EXPECT_EQ(s.content, "The answer is 5.");
  s = split(ReasoningFormat::kThink, false, "No thinking <thin here");  // a partial marker at the end is text
  EXPECT_EQ(s.content, "No thinking <thin here");
  EXPECT_EQ(s.reasoning, "");
  // Seed-OSS: its own tags; <think> is text there.
  s = split(ReasoningFormat::kSeedThink, false, "<seed:think>Budget: small.</seed:think>Use <think> tags.");
  EXPECT_EQ(s.reasoning, "Budget: small.");
  EXPECT_EQ(s.content, "Use <think> tags.");
}

TEST(Reasoning, HarmonyChannels) {
  Split s = split(
      ReasoningFormat::kHarmony, false,
      "<|channel|>analysis<|message|>User wants 2+3.<|end|><|start|>assistant<|channel|>final<|message|>"
      "5<|return|>");
  EXPECT_EQ(s.reasoning, "User wants 2+3.");
  EXPECT_EQ(s.content, "5");
  EXPECT_TRUE(s.calls.empty());
  // A tool call: the recipient after the channel or before it, with a constrain type.
  for (const std::string call :
       {"<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
        "<|message|>{\"city\": \"Paris\"}<|call|>",
        "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>"
        "{\"city\": \"Paris\"}<|call|>"}) {
    s = split(ReasoningFormat::kHarmony, false, "<|channel|>analysis<|message|>Need weather.<|end|>" + call);
    EXPECT_EQ(s.reasoning, "Need weather.");
    EXPECT_EQ(s.content, "");
    ASSERT_EQ(s.calls.size(), 1u) << call;
    EXPECT_EQ(s.calls[0].name, "get_weather");
    EXPECT_EQ(s.calls[0].arguments, "{\"city\": \"Paris\"}");
  }
  // Plain text without headers (a model that skips the channels), and a final answer cut short.
  s = split(ReasoningFormat::kHarmony, false, "Hello there");
  EXPECT_EQ(s.content, "Hello there");
  s = split(ReasoningFormat::kHarmony, false, "<|channel|>final<|message|>Par");
  EXPECT_EQ(s.content, "Par");
  // An unfinished call stays text.
  s = split(ReasoningFormat::kHarmony, false, "<|channel|>commentary to=functions.f<|message|>{\"a\":");
  EXPECT_TRUE(s.calls.empty());
  EXPECT_EQ(s.content, "{\"a\":");
  // A call whose JSON is complete when the reply ends (an end-of-generation token other than
  // <|call|>) is a call.
  s = split(ReasoningFormat::kHarmony, false, "<|channel|>commentary to=functions.f<|message|>{\"a\": [1]} ");
  ASSERT_EQ(s.calls.size(), 1u);
  EXPECT_EQ(s.calls[0].arguments, "{\"a\": [1]}");
  EXPECT_EQ(s.content, "");
}

}  // namespace
}  // namespace nbits
