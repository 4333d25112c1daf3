#include "tokenizer/chat_reply.h"

#include <algorithm>

#include "base/json_depth.h"

namespace nbits {
namespace {

struct ThinkMarkers {
  std::string_view open, close;
};
ThinkMarkers think_markers(ReasoningFormat f) {
  if (f == ReasoningFormat::kSeedThink) return {"<seed:think>", "</seed:think>"};
  return {"<think>", "</think>"};
}
constexpr std::string_view kStart = "<|start|>", kChannel = "<|channel|>", kMessage = "<|message|>",
                           kConstrain = "<|constrain|>";
constexpr std::string_view kBodyEnds[] = {"<|end|>", "<|return|>", "<|call|>"};

// Bytes at the end of s that could begin marker m (held until the next piece tells).
size_t partial(std::string_view s, std::string_view m) {
  for (size_t n = std::min(s.size(), m.size() - 1); n > 0; --n)
    if (s.substr(s.size() - n) == m.substr(0, n)) return n;
  return 0;
}

std::string trim(std::string_view s) {  // of spaces and newlines
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

}  // namespace

ReasoningFormat reasoning_format(const std::string& chat_template) {
  if (chat_template.find("<|channel|>") != std::string::npos &&
      chat_template.find("<|message|>") != std::string::npos)
    return ReasoningFormat::kHarmony;
  if (chat_template.find("</seed:think>") != std::string::npos) return ReasoningFormat::kSeedThink;
  if (chat_template.find("</think>") != std::string::npos) return ReasoningFormat::kThink;
  return ReasoningFormat::kNone;
}

const char* reasoning_format_name(ReasoningFormat f) {
  switch (f) {
    case ReasoningFormat::kThink:
      return "think";
    case ReasoningFormat::kSeedThink:
      return "seed_think";
    case ReasoningFormat::kHarmony:
      return "harmony";
    case ReasoningFormat::kNone:
      break;
  }
  return "none";
}

bool think_tags(ReasoningFormat f) {
  return f == ReasoningFormat::kThink || f == ReasoningFormat::kSeedThink;
}

bool prompt_opens_think(std::string_view prompt, ReasoningFormat f) {
  if (!think_tags(f)) return false;
  const ThinkMarkers m = think_markers(f);
  const size_t open = prompt.rfind(m.open);
  return open != std::string_view::npos && prompt.find(m.close, open) == std::string_view::npos;
}

ReplyChannels::Piece ReplyChannels::push(std::string_view text) {
  Piece out;
  held_ += text;
  if (f_ == ReasoningFormat::kNone) {
    out.content = std::move(held_);
    held_.clear();
  } else if (think_tags(f_)) {
    think(out, false);
  } else {
    harmony(out, false);
  }
  return out;
}

ReplyChannels::Piece ReplyChannels::finish() {
  Piece out;
  if (think_tags(f_)) {
    think(out, true);
  } else if (f_ == ReasoningFormat::kHarmony) {
    harmony(out, true);
  } else {
    out.content = std::move(held_);
    held_.clear();
  }
  return out;
}

void ReplyChannels::think(Piece& out, bool last) {
  for (;;) {
    const ThinkMarkers m = think_markers(f_);
    const std::string_view marker = think_ ? m.close : m.open;
    const size_t at = held_.find(marker);
    std::string& dst = think_ ? out.reasoning : out.content;
    if (at == std::string::npos) {
      const size_t keep = last ? 0 : partial(held_, marker);
      dst += held_.substr(0, held_.size() - keep);
      held_.erase(0, held_.size() - keep);
      return;
    }
    dst += held_.substr(0, at);
    held_.erase(0, at + marker.size());
    think_ = !think_;
  }
}

// Where the message's body goes: by its recipient (a tool call, taken whole at its end) or channel.
void ReplyChannels::route(std::string_view body, Piece& out) const {
  if (channel_.rfind("analysis", 0) == 0)
    out.reasoning += body;
  else
    out.content += body;
}

void ReplyChannels::harmony(Piece& out, bool last) {
  for (;;) {
    if (!in_body_) {  // the header, up to <|message|>
      const size_t m = held_.find(kMessage);
      if (m == std::string::npos) {
        // A reply that is plain text (no header at all) is content as it comes.
        if (held_.find("<|") == std::string::npos && channel_.empty() && recipient_.empty()) {
          const size_t keep = last ? 0 : partial(held_, kChannel);
          out.content += held_.substr(0, held_.size() - keep);
          held_.erase(0, held_.size() - keep);
        } else if (last) {
          out.content += held_;  // an unfinished header: keep its text
          held_.clear();
        }
        return;
      }
      // The header's words, markers as separators: "<|start|>assistant<|channel|>commentary
      // to=functions.f <|constrain|>json" -> [assistant] [<|channel|>] [commentary] [to=functions.f] [json].
      std::vector<std::string> words;
      std::string word;
      const std::string_view header = std::string_view(held_).substr(0, m);
      for (size_t i = 0; i < header.size();) {
        std::string_view marker;
        for (std::string_view k : {kStart, kChannel, kConstrain})
          if (header.substr(i, k.size()) == k) marker = k;
        if (!marker.empty() || header[i] == ' ' || header[i] == '\t' || header[i] == '\n') {
          if (!word.empty()) words.push_back(std::move(word));
          word.clear();
          if (marker == kChannel) words.emplace_back(kChannel);
          i += marker.empty() ? 1 : marker.size();
          continue;
        }
        word += header[i++];
      }
      if (!word.empty()) words.push_back(std::move(word));
      held_.erase(0, m + kMessage.size());
      channel_.clear(), recipient_.clear();
      for (size_t i = 0; i < words.size(); ++i) {
        if (words[i] == kChannel && i + 1 < words.size()) channel_ = words[i + 1];
        if (words[i].rfind("to=", 0) == 0) recipient_ = words[i].substr(3);
      }
      in_body_ = true;
    }
    // The body, up to the first of its end markers.
    size_t end = std::string::npos, used = 0;
    for (std::string_view e : kBodyEnds)
      if (const size_t p = held_.find(e); p < end) end = p, used = p + e.size();
    const bool call = recipient_.rfind("functions.", 0) == 0;
    if (end == std::string::npos) {
      if (last) {
        // A call whose arguments are complete JSON (the reply ended at another end-of-generation
        // token, or exactly there) is a call; an unfinished one stays text.
        const std::string args = trim(held_);
        if (call && !args.empty() && json_first_value_end(args) == args.size())
          out.calls.push_back({"", recipient_.substr(10), args});
        else if (call)
          out.content += held_;
        else
          route(held_, out);
        held_.clear();
        in_body_ = false;
        return;
      }
      if (!call) {  // stream the body, holding what may begin an end marker
        size_t keep = 0;
        for (std::string_view e : kBodyEnds) keep = std::max(keep, partial(held_, e));
        route(std::string_view(held_).substr(0, held_.size() - keep), out);
        held_.erase(0, held_.size() - keep);
      }
      return;
    }
    if (call)
      out.calls.push_back({"", recipient_.substr(10), trim(std::string_view(held_).substr(0, end))});
    else
      route(std::string_view(held_).substr(0, end), out);
    held_.erase(0, used);
    in_body_ = false;
    channel_.clear(), recipient_.clear();
  }
}

}  // namespace nbits
