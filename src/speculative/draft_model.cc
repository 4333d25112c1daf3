#include "speculative/draft_model.h"

#include <algorithm>

#include "base/error.h"
#include "base/timer.h"
#include "llm/sampler.h"

namespace nbits::speculative {

void check_same_vocabulary(const Tokenizer& model, const Tokenizer& draft) {
  const int32_t n = model.vocab_size();
  NBITS_CHECK(n == draft.vocab_size(), "the draft model's vocabulary (", draft.vocab_size(),
              " tokens) is not the model's (", n, "): a draft model must share the tokenizer");
  for (int32_t id = 0; id < n; ++id)
    NBITS_CHECK(model.id_to_token(id) == draft.id_to_token(id),
                "the draft model's vocabulary differs from the model's at token ", id, " (",
                draft.id_to_token(id), " vs ", model.id_to_token(id),
                "): a draft model must share the tokenizer");
}

DraftModel::DraftModel(std::unique_ptr<llm::Generator> draft) : draft_(std::move(draft)) {
  NBITS_CHECK(draft_ != nullptr, "draft model: no generator");
}

void DraftModel::propose(std::span<const int32_t> context, int64_t max_tokens, std::vector<int32_t>& out) {
  out.clear();
  catch_up_ms_ = 0;
  llm::Generator& g = *draft_;
  const auto len = static_cast<int64_t>(context.size());
  // The draft's room: the whole context plus the proposal must fit its cache.
  max_tokens = std::min(max_tokens, g.capacity() - len);
  if (max_tokens <= 0 || len == 0) return;
  // Keep the common prefix (at most len - 1 tokens: the last one is run to get logits).
  const std::span<const int32_t> have = g.tokens();
  int64_t common = 0;
  const int64_t most = std::min<int64_t>(static_cast<int64_t>(have.size()), len - 1);
  while (common < most && have[static_cast<size_t>(common)] == context[static_cast<size_t>(common)]) ++common;
  g.truncate(common);
  // Up to 2 new tokens is the steady state (the last accepted draft and the token after the
  // drafts); more is a catch-up (the prompt, or the tokens of plain steps while speculation was off).
  const Stopwatch sw;
  std::span<const float> logits = g.append(context.subspan(static_cast<size_t>(common)));
  if (len - common > 2) catch_up_ms_ = sw.elapsed_ms();
  for (int64_t i = 0; i < max_tokens; ++i) {
    const int32_t tok = llm::argmax(logits);
    out.push_back(tok);
    if (i + 1 < max_tokens) logits = g.append(std::span<const int32_t>(&out.back(), 1));
  }
}

}  // namespace nbits::speculative
