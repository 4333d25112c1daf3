// Incremental detokenizer: emits text as soon as it is final, never splitting a UTF-8 character.
#include <algorithm>

#include "base/error.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/unicode.h"

namespace nbits {

struct StreamDecoder::State {
  const tok::TokenizerImpl* t;
  bool skip_special;
  std::string pending;       // kByteLevel: undecided bytes; kPieces: current <0xNN> run
  size_t run_len = 0;        // kPieces: tokens in the run
  size_t strip_left = 0;     // kPieces: leading Strip characters still to remove
  std::vector<int32_t> ids;  // kWhole

  void reset() {
    pending.clear();
    run_len = 0;
    ids.clear();
    strip_left = 0;
    for (const auto& d : t->decoder)
      if (d.kind == tok::DecStep::kStrip) strip_left = d.start;
  }

  // kByteLevel: moves the final part of pending (complete characters, invalid subparts) to out.
  std::string drain(bool final) {
    std::string out;
    size_t i = 0;
    while (i < pending.size()) {
      uint32_t cp;
      bool truncated;
      size_t n = tok::utf8_step(pending, i, cp, truncated);
      if (cp == 0xFFFD && tok::utf8_valid_len(pending, i) == 0) {
        if (truncated && !final) break;
        out += "\xEF\xBF\xBD";
      } else {
        out.append(pending, i, n);
      }
      i += n;
    }
    pending.erase(0, i);
    return out;
  }

  std::string strip(std::string s) {
    for (const auto& d : t->decoder) {
      if (d.kind != tok::DecStep::kStrip) continue;
      size_t b = 0;
      while (strip_left > 0 && s.compare(b, d.a.size(), d.a) == 0) {
        b += d.a.size();
        --strip_left;
      }
      if (b < s.size()) strip_left = 0;
      s.erase(0, b);
    }
    return s;
  }

  std::string end_run() {
    if (!run_len) return "";
    std::string r;
    if (tok::utf8_is_valid(pending))
      r = pending;
    else
      for (size_t k = 0; k < run_len; ++k) r += "\xEF\xBF\xBD";
    pending.clear();
    run_len = 0;
    return r;
  }
};

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skip_special)
    : state_(std::make_unique<State>()) {
  state_->t = tokenizer.impl_.get();
  state_->skip_special = skip_special;
  state_->reset();
}

StreamDecoder::~StreamDecoder() = default;

std::string StreamDecoder::push(int32_t id) {
  State& s = *state_;
  const tok::TokenizerImpl& t = *s.t;
  NBITS_CHECK(id >= 0 && static_cast<size_t>(id) < t.id_to_token.size(), "token id ", id,
              " is out of range (vocabulary size ", t.id_to_token.size(), ")");
  if (s.skip_special && t.special[static_cast<size_t>(id)]) return "";
  const std::string& token = t.id_to_token[static_cast<size_t>(id)];
  switch (t.stream_kind) {
    case tok::StreamKind::kByteLevel: {
      s.pending += tok::byte_level_bytes(token);
      return s.drain(false);
    }
    case tok::StreamKind::kPieces: {
      std::string text = token;
      bool fallback = false;
      for (const auto& d : t.decoder) {
        if (d.kind == tok::DecStep::kReplace) {
          std::string r;
          size_t pos = 0;
          for (size_t f; (f = text.find(d.a, pos)) != std::string::npos; pos = f + d.a.size()) {
            r.append(text, pos, f - pos);
            r += d.b;
          }
          r.append(text, pos);
          text = std::move(r);
        }
        if (d.kind == tok::DecStep::kByteFallback) fallback = true;
      }
      if (fallback) {
        int v = tok::byte_fallback_value(text);
        if (v >= 0) {
          s.pending.push_back(static_cast<char>(v));
          ++s.run_len;
          return "";
        }
      }
      return s.strip(s.end_run() + text);
    }
    case tok::StreamKind::kWhole:
      s.ids.push_back(id);
      return "";
  }
  return "";
}

std::string StreamDecoder::flush() {
  State& s = *state_;
  std::string r;
  switch (s.t->stream_kind) {
    case tok::StreamKind::kByteLevel:
      r = s.drain(true);
      break;
    case tok::StreamKind::kPieces:
      r = s.strip(s.end_run());
      break;
    case tok::StreamKind::kWhole: {
      std::vector<std::string> tokens;
      for (int32_t id : s.ids) tokens.push_back(s.t->id_to_token[static_cast<size_t>(id)]);
      r = s.t->decode_tokens(std::move(tokens));
      break;
    }
  }
  s.reset();
  return r;
}

}  // namespace nbits
