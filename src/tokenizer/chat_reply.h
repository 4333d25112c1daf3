// A chat reply's parts by its template's format: the reasoning it carries apart from its answer
// (`nbits serve`'s `reasoning_content`, llama-server's and DeepSeek's field; `nbits run|chat`
// print it apart), the answer, and (harmony) its tool calls, taken apart as the reply streams.
//
// Formats (by the chat template):
// kThink: <think>...</think> (Qwen3, DeepSeek-R1 and its distills, SmolLM3, ...); a template whose
//   generation prompt ends in an open <think> starts the reply inside it;
// kSeedThink: the same with ByteDance Seed-OSS's <seed:think>...</seed:think>;
// kHarmony: gpt-oss's channels. The reply is a sequence of messages `[<|start|>assistant]
//   <|channel|>C[ to=R][ <|constrain|>T]<|message|>BODY(<|end|> | <|return|> | <|call|>)`; the
//   analysis channel is reasoning, the final channel (or a message without a channel) content,
//   and a message to `functions.NAME` a tool call whose arguments are BODY. The markers are special
//   tokens: the caller keeps them in the text it gives here.
// kNone: everything is content.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "nbits/chat_message.h"

namespace nbits {

enum class ReasoningFormat { kNone, kThink, kSeedThink, kHarmony };

// The format of a chat template ("" = none).
ReasoningFormat reasoning_format(const std::string& chat_template);
const char* reasoning_format_name(ReasoningFormat f);
// The formats whose reasoning is a tagged block (kThink, kSeedThink).
bool think_tags(ReasoningFormat f);
// True when f has think tags and the rendered prompt leaves one open (the reply starts as
// reasoning).
bool prompt_opens_think(std::string_view prompt, ReasoningFormat f = ReasoningFormat::kThink);

// Splits a streamed reply into reasoning, content and (kHarmony) tool calls. Text that may be the
// start of a marker is held until it is known.
class ReplyChannels {
 public:
  ReplyChannels(ReasoningFormat f, bool in_reasoning) : f_(f), think_(in_reasoning) {}

  struct Piece {
    std::string reasoning, content;
    std::vector<ToolCall> calls;  // kHarmony: calls completed by this piece (ids empty)
  };
  Piece push(std::string_view text);
  // End of the reply: whatever is held (a call whose arguments are not yet one JSON value stays
  // content).
  Piece finish();

 private:
  void route(std::string_view body, Piece& out) const;
  void harmony(Piece& out, bool last);
  void think(Piece& out, bool last);

  ReasoningFormat f_;
  bool think_ = false;  // kThink: inside <think>
  std::string held_;
  // kHarmony: the current message's header (before <|message|>) is being read, or its body.
  bool in_body_ = false;
  std::string channel_, recipient_;
};

}  // namespace nbits
