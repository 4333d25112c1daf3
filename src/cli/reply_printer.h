// A chat reply printed as it streams (`nbits run --chat`, `nbits chat`): its answer to stdout,
// its reasoning (a <think> block, gpt-oss's analysis channel) to stderr, dimmed on a terminal,
// so that a pipe reading stdout gets the answer alone; --hide-reasoning leaves the reasoning out.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "tokenizer/chat_reply.h"
#include "tokenizer/tokenizer.h"

namespace nbits::cli {

class Flags;

// --hide-reasoning.
void add_reasoning_flags(Flags& f);
// The reasoning format of a --chat-format choice ("auto": the tokenizer's template; nullopt: plain
// text, none).
ReasoningFormat chat_reasoning_format(const Tokenizer& tokenizer, const std::optional<std::string>& format);

class ReplyPrinter {
 public:
  // prompt: the rendered prompt (a generation prompt that opens <think> starts the reply in it).
  ReplyPrinter(ReasoningFormat format, std::string_view prompt, bool hide_reasoning);
  // Whether the reply's decoder keeps special tokens (harmony's markers are special tokens).
  bool keeps_special() const { return format_ == ReasoningFormat::kHarmony; }
  void push(std::string_view text);
  // End of the reply: prints what was held and a newline after the answer.
  void finish();
  const std::string& answer() const { return answer_; }

 private:
  void print(const ReplyChannels::Piece& p);

  ReasoningFormat format_;
  ReplyChannels channels_;
  bool hide_, dim_;
  bool in_reasoning_ = false;  // stderr is inside a dimmed run
  std::string answer_;
};

}  // namespace nbits::cli
