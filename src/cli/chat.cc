// `nbits chat`: interactive multi-turn generation. The KV cache is kept across
// turns: each turn prefills only its new tokens.
#include "tokenizer/chat.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "cli/command.h"
#include "cli/common.h"
#include "cli/guidance_flags.h"
#include "cli/model_setup.h"
#include "cli/reply_printer.h"
#include "cli/speculation.h"
#include "llm/stream_generate.h"

namespace nbits::cli {
namespace {

class ChatSession {
 public:
  ChatSession(ModelSetup& m, llm::Sampler& sampler, const GuidanceFlags& guide,
              std::optional<std::string> format, std::string system, int64_t n_predict, llm::DecodeLoop loop,
              bool hide_reasoning)
      : m_(m),
        sampler_(sampler),
        guide_(guide),
        loop_(std::move(loop)),
        format_(std::move(format)),
        system_(std::move(system)),
        n_predict_(n_predict),
        hide_reasoning_(hide_reasoning) {
    reset();
  }

  void reset() {
    m_.generator->reset();
    messages_.clear();
    rendered_.clear();
    if (!system_.empty()) messages_.push_back({"system", system_});
  }

  // One user turn: prefill the new tokens, stream the reply to stdout.
  void turn(const std::string& user) {
    std::vector<int32_t> new_ids = new_tokens(user);
    const int64_t pending = m_.generator->pending() >= 0 ? 1 : 0;
    std::fprintf(stderr, "[prefilled %lld tokens]\n", static_cast<long long>(new_ids.size()) + pending);
    ReplyPrinter out(chat_reasoning_format(*m_.tokenizer, format_), rendered_, hide_reasoning_);
    StreamDecoder stream(*m_.tokenizer, /*skip_special=*/!out.keeps_special());
    sampler_.set_constraint(guide_.constraint());  // each reply matches on its own
    llm::TextResult r = llm::generate_text(
        *m_.generator, new_ids, n_predict_, sampler_, &stream,
        [&out](std::string_view piece) { out.push(piece); }, {}, loop_);
    out.finish();
    if (format_) {  // the history keeps the answer; the cache keeps what was generated
      messages_.push_back({"assistant", out.answer()});
      rendered_ += m_.tokenizer->decode(r.generated.ids, /*skip_special=*/false);
    }
  }

 private:
  // Tokens to prefill for this turn (the pending token of the last reply comes on top).
  std::vector<int32_t> new_tokens(const std::string& user) {
    const bool first = m_.generator->length() == 0 && m_.generator->pending() < 0;
    if (!format_) {  // plain: raw text continuation
      std::string text = first && !system_.empty() ? system_ + "\n" + user : user;
      return m_.tokenizer->encode(text, /*add_special=*/first);
    }
    messages_.push_back({"user", user});
    std::string full;
    try {
      full = render_chat(*m_.tokenizer, messages_, /*add_generation_prompt=*/true, format_);
    } catch (...) {
      messages_.pop_back();
      throw;
    }
    std::vector<int32_t> ids;
    if (full.compare(0, rendered_.size(), rendered_) == 0) {
      ids = m_.tokenizer->encode(std::string_view(full).substr(rendered_.size()), /*add_special=*/false);
    } else {
      // The template re-rendered earlier turns differently: keep the common token prefix.
      ids = m_.tokenizer->encode(full, /*add_special=*/false);
      auto cached = m_.generator->tokens();
      size_t common = 0;
      while (common < cached.size() && common < ids.size() && cached[common] == ids[common]) ++common;
      m_.generator->truncate(static_cast<int64_t>(common));
      ids.erase(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(common));
    }
    rendered_ = full;
    return ids;
  }

  ModelSetup& m_;
  llm::Sampler& sampler_;
  const GuidanceFlags& guide_;
  llm::DecodeLoop loop_;
  std::optional<std::string> format_;  // nullopt = plain text
  std::string system_;
  int64_t n_predict_;
  bool hide_reasoning_;
  std::vector<ChatMessage> messages_;
  std::string rendered_;  // the text the cache holds (template mode)
};

int chat_main(const std::vector<std::string>& args) {
  std::vector<std::string> formats = {"auto", "plain"};
  for (const auto& n : builtin_chat_formats()) formats.push_back(n);
  Flags f("chat", "-m DIR [--system TEXT] [--chat-format NAME] [options]",
          "Interactive chat: one line of stdin is one user turn; the reply streams to stdout.\n"
          "The KV cache is reused across turns (stderr shows \"[prefilled N tokens]\" per turn).\n"
          "Commands: /reset (forget the conversation), /exit (or end of input, Ctrl-D).");
  f.str("--system", "TEXT", "system prompt");
  f.choice("--chat-format", formats,
           "auto: the tokenizer's chat template, else plain text; plain: raw text continuation", "auto");
  add_model_flags(f);
  add_sampling_flags(f, 256);
  add_speculation_flags(f);
  add_guidance_flags(f);
  add_reasoning_flags(f);
  if (auto rc = f.parse(args)) return *rc;

  ModelSetup m = load_model_setup(f, /*need_tokenizer=*/true);
  llm::Sampler sampler(sampling_options(f, m.generator->config()));
  const GuidanceFlags guide(f, m);
  Speculation spec(f, m, guide.on());
  std::optional<std::string> format = f.get_str("--chat-format");
  if (*format == "plain" || (*format == "auto" && m.tokenizer->chat_template().empty())) format.reset();
  ChatSession chat(m, sampler, guide, format, f.get_str("--system"), f.get_i64("--n-predict"), spec.loop(),
                   f.get_flag("--hide-reasoning"));
  const bool tty = ::isatty(0) != 0;
  std::string line;
  for (;;) {
    if (tty) {
      std::fputs("> ", stdout);
      std::fflush(stdout);
    }
    if (!std::getline(std::cin, line)) break;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line == "/exit" || line == "/quit") break;
    if (line == "/reset") {
      chat.reset();
      std::fputs("[reset]\n", stderr);
      continue;
    }
    if (line.empty()) continue;
    try {
      chat.turn(line);
    } catch (const Error& e) {
      std::fprintf(stderr, "nbits chat: error: %s (/reset starts over)\n", printable(e.what()).c_str());
      if (!tty) return 1;
    }
  }
  spec.print_stats(stderr);
  if (f.get_flag("--profile")) print_profile(m.generator->session(), stderr);
  return 0;
}

}  // namespace

NBITS_COMMAND("chat", "interactive multi-turn chat (KV cache reused across turns)", chat_main);

}  // namespace nbits::cli
