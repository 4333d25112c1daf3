#include "cli/reply_printer.h"

#include <unistd.h>

#include <cstdio>

#include "cli/common.h"
#include "tokenizer/chat.h"

namespace nbits::cli {
namespace {

void put(std::FILE* f, std::string_view s) {
  std::fwrite(s.data(), 1, s.size(), f);
  std::fflush(f);
}

}  // namespace

ReasoningFormat chat_reasoning_format(const Tokenizer& tokenizer, const std::optional<std::string>& format) {
  if (!format) return ReasoningFormat::kNone;
  return reasoning_format(*format == "auto" ? tokenizer.chat_template() : builtin_chat_template(*format));
}

void add_reasoning_flags(Flags& f) {
  f.flag("--hide-reasoning",
         "leave out a reply's reasoning (a <think> block, gpt-oss's analysis channel); by default it goes "
         "to stderr, apart from the answer on stdout");
}

ReplyPrinter::ReplyPrinter(ReasoningFormat format, std::string_view prompt, bool hide_reasoning)
    : format_(format),
      channels_(format_, prompt_opens_think(prompt, format_)),
      hide_(hide_reasoning),
      dim_(::isatty(::fileno(stderr)) != 0) {}

void ReplyPrinter::print(const ReplyChannels::Piece& p) {
  if (!p.reasoning.empty() && !hide_) {
    if (dim_ && !in_reasoning_) put(stderr, "\033[2m");
    in_reasoning_ = true;
    put(stderr, p.reasoning);
  }
  if (!p.content.empty()) {
    if (in_reasoning_) {  // the answer starts: close the reasoning's line
      put(stderr, dim_ ? "\033[0m\n" : "\n");
      in_reasoning_ = false;
    }
    answer_ += p.content;
    put(stdout, p.content);
  }
}

void ReplyPrinter::push(std::string_view text) { print(channels_.push(text)); }

void ReplyPrinter::finish() {
  print(channels_.finish());
  if (in_reasoning_) put(stderr, dim_ ? "\033[0m\n" : "\n");
  in_reasoning_ = false;
  put(stdout, "\n");
}

}  // namespace nbits::cli
