#include "serve/token_logprobs.h"

#include "base/error.h"
#include "llm/logprobs.h"

namespace nbits::serve {

using nlohmann::json;

void TokenLogprobs::add(std::span<const float> logits, int32_t prev, int32_t id, std::string piece) {
  NBITS_CHECK(id >= 0 && static_cast<size_t>(id) < logits.size(), "logprobs: token ", id,
              " is outside the logits' ", logits.size());
  const double lse = llm::log_sum_exp(logits);
  Entry e{{std::move(piece), static_cast<double>(logits[static_cast<size_t>(id)]) - lse}, {}, offset_};
  for (const llm::TokenLogprob& t : llm::top_logprobs(logits, top_, lse))
    e.top.push_back({t.id == id ? e.chosen.text : text_(prev, t.id), t.logprob});
  offset_ += e.chosen.text.size();
  entries_.push_back(std::move(e));
}

namespace {

json bytes_of(const std::string& s) {
  json b = json::array();
  for (const char c : s) b.push_back(static_cast<unsigned char>(c));
  return b;
}

}  // namespace

json TokenLogprobs::to_json(bool chat, size_t from) const {
  if (chat) {
    json content = json::array();
    for (size_t i = from; i < entries_.size(); ++i) {
      const Entry& e = entries_[i];
      json top = json::array();
      for (const Alt& a : e.top)
        top.push_back({{"token", a.text}, {"logprob", a.logprob}, {"bytes", bytes_of(a.text)}});
      content.push_back({{"token", e.chosen.text},
                         {"logprob", e.chosen.logprob},
                         {"bytes", bytes_of(e.chosen.text)},
                         {"top_logprobs", std::move(top)}});
    }
    return {{"content", std::move(content)}};
  }
  json tokens = json::array(), logprobs = json::array(), tops = json::array(), offsets = json::array();
  for (size_t i = from; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    tokens.push_back(e.chosen.text);
    logprobs.push_back(e.chosen.logprob);
    json top = json::object();
    for (const Alt& a : e.top)
      if (!top.contains(a.text)) top[a.text] = a.logprob;  // two ids may read the same
    tops.push_back(std::move(top));
    offsets.push_back(e.offset);
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(logprobs)},
          {"top_logprobs", std::move(tops)},
          {"text_offset", std::move(offsets)}};
}

}  // namespace nbits::serve
