#include "speculative/speculative_decode.h"

#include <algorithm>

#include "base/error.h"
#include "base/timer.h"

namespace nbits::speculative {

SpeculativeDecoder::SpeculativeDecoder(Drafter& drafter, int64_t max_draft, int64_t min_draft,
                                       bool fast_forward)
    : drafter_(drafter), length_(max_draft, min_draft), fast_forward_(fast_forward) {}

llm::GenerateResult SpeculativeDecoder::generate(llm::Generator& g, std::span<const int32_t> new_ids,
                                                 int64_t max_new_tokens, llm::Sampler& sampler,
                                                 const std::function<bool(int32_t)>& on_token) {
  if (!g.batchable() || (length_.max_draft() == 0 && !sampler.constraint()))
    return g.generate(new_ids, max_new_tokens, sampler, on_token);
  llm::GenerateResult result;
  g.generate(new_ids, 0, sampler);  // the prompt (and a pending token), as plain generate runs it
  if (max_new_tokens <= 0) return result;
  result.ids.reserve(static_cast<size_t>(max_new_tokens));
  // Plain decode's checks for a token just drawn, `cached` tokens before it: false = stop here.
  auto emit = [&](int32_t tok, int64_t cached) {
    result.ids.push_back(tok);
    const bool go_on = !on_token || on_token(tok);
    if (g.config().is_eos(tok)) {
      result.stop = llm::StopReason::kEos;
    } else if (!go_on) {
      result.stop = llm::StopReason::kCallback;
    } else if (static_cast<int64_t>(result.ids.size()) >= max_new_tokens) {
      result.stop = llm::StopReason::kMaxTokens;
    } else if (cached >= g.capacity()) {
      result.stop = llm::StopReason::kContextFull;
    } else {
      return true;
    }
    return false;
  };
  const int32_t first = g.sample_next(sampler);  // pending: drawn, not yet run
  if (!emit(first, g.length())) return result;
  while (step(g, sampler, max_new_tokens - static_cast<int64_t>(result.ids.size()), emit)) {
  }
  return result;
}

bool SpeculativeDecoder::step(llm::Generator& g, llm::Sampler& sampler, int64_t max_tokens,
                              const Emit& emit) {
  const int32_t tok = g.pending();
  NBITS_CHECK(tok >= 0, "speculative step: no pending token to run");
  NBITS_CHECK(max_tokens >= 1, "speculative step: no token may be produced (max_tokens ", max_tokens, ")");
  const int64_t V = g.vocab_size();
  Stopwatch sw;
  const int64_t L0 = g.length();
  const int64_t room = std::max<int64_t>(0, std::min(max_tokens - 1, g.capacity() - L0 - 1));  // draft rows
  forced_.clear();
  if (fast_forward_ && sampler.constraint() && room > 0) sampler.constraint()->forced(room, forced_);
  const auto nf = static_cast<int64_t>(forced_.size());
  const int64_t k = std::max<int64_t>(0, std::min(length_.next(), room - nf));
  context_.assign(g.tokens().begin(), g.tokens().end());
  context_.push_back(tok);
  context_.insert(context_.end(), forced_.begin(), forced_.end());
  draft_.clear();
  // Speculation off: a cheap drafter's guess is still checked, to notice when it pays again.
  if (k > 0 || (drafter_.cheap() && nf == 0)) drafter_.propose(context_, std::max<int64_t>(k, 1), draft_);
  const int32_t guess = k == 0 && nf == 0 && !draft_.empty() ? draft_[0] : -1;
  if (static_cast<int64_t>(draft_.size()) > k) draft_.resize(static_cast<size_t>(k));
  draft_.insert(draft_.begin(), forced_.begin(), forced_.end());
  ++stats_.steps;
  if (draft_.empty()) {  // a plain step
    g.append(std::span<const int32_t>(&tok, 1));
    const int32_t next = g.sample_next(sampler);
    const double ms = sw.elapsed_ms();
    length_.record_step(0, 0, ms);
    if (guess >= 0) length_.record_acceptance(1, next == guess ? 1 : 0);
    g.count_decode(1, ms);
    return emit(next, g.length());
  }
  const auto d = static_cast<int64_t>(draft_.size());
  rows_.assign(1, tok);
  rows_.insert(rows_.end(), draft_.begin(), draft_.end());
  const std::span<const float> logits = g.verify(rows_);
  ++stats_.verify_steps;
  stats_.drafted += d - nf;
  stats_.forced += nf;
  // Row i follows rows_[i]; it is drawn from with the history plain decode would have.
  int64_t i = 0;
  int32_t next = -1;
  bool stop = false;
  for (;; ++i) {
    next = sampler.sample(logits.subspan(static_cast<size_t>(i * V), static_cast<size_t>(V)),
                          g.tokens().first(static_cast<size_t>(L0 + 1 + i)));
    if (i == d || next != draft_[static_cast<size_t>(i)]) break;
    if (!emit(next, L0 + 1 + i)) {  // an accepted draft ends generation: it stays pending
      stop = true;
      break;
    }
  }
  // The cache keeps tok and the accepted drafts before `next`, which is pending: the first
  // token that differs from the proposal, the one after all of it, or (stop) the accepted
  // draft generation ended at. Either way the step produced i + 1 tokens.
  g.keep(L0 + 1 + i, next);
  const int64_t accepted = stop ? i + 1 : i;
  stats_.forced_kept += std::min(accepted, nf);
  stats_.accepted += std::max<int64_t>(0, accepted - nf);
  const double ms = sw.elapsed_ms();
  // The draft length learns from the drafter's own steps (forced tokens are not its work), less
  // its catch-up: once per return from plain steps, it would price every drafted token as a
  // prefill (a 0.5B draft model behind 48 plain steps of a 1.5B kept speculation off for good).
  if (nf == 0) length_.record_step(d, accepted, std::max(0.0, ms - drafter_.last_catch_up_ms()));
  g.count_decode(i + 1, ms);
  if (stop) return false;
  return emit(next, g.length());
}

}  // namespace nbits::speculative
