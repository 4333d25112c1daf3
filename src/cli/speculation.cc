#include "cli/speculation.h"

#include <string>

#include "base/error.h"
#include "speculative/draft_model.h"
#include "speculative/prompt_lookup.h"

namespace nbits::cli {

void add_speculation_flags(Flags& f) {
  f.choice("--spec", {"off", "lookup", "draft"},
           "speculative decoding: lookup = drafts from the prompt and the text so far (n-grams),\n"
           "                             draft = drafts from a smaller model of the same tokenizer "
           "(--draft-model).\n"
           "                             The output is plain decoding's, token for token",
           "off");
  f.str("--draft-model", "FILE", "the draft model (a .gguf file or a model folder); implies --spec draft");
  f.i64("--draft-max", "N", "the longest draft; the length adapts below it to what pays", 8, 1, 32);
  f.i64("--draft-min", "N", "the shortest draft (= --draft-max: a fixed length, no adapting)", 0, 0, 32);
}

Speculation::Speculation(const Flags& f, const ModelSetup& m, bool fast_forward) {
  std::string kind = f.get_str("--spec");
  if (f.has("--draft-model")) {
    NBITS_CHECK(kind == "off" || kind == "draft", "--draft-model goes with --spec draft, not --spec ", kind);
    kind = "draft";
  }
  if (kind == "off") {
    if (fast_forward && m.generator->batchable()) {
      drafter_ = std::make_unique<speculative::NoDrafts>();
      decoder_ = std::make_unique<speculative::SpeculativeDecoder>(*drafter_, 0);
    }
    return;
  }
  const int64_t max_draft = f.get_i64("--draft-max"), min_draft = f.get_i64("--draft-min");
  NBITS_CHECK(min_draft <= max_draft, "--draft-min ", min_draft, " is above --draft-max ", max_draft);
  if (kind == "lookup") {
    drafter_ = std::make_unique<speculative::PromptLookup>();
  } else {
    NBITS_CHECK(f.has("--draft-model"), "--spec draft needs --draft-model FILE");
    draft_ = load_model_setup(f, f.get_str("--draft-model"), /*need_tokenizer=*/m.tokenizer != nullptr);
    const int64_t v = m.generator->vocab_size(), dv = draft_.generator->vocab_size();
    if (m.tokenizer && draft_.tokenizer) speculative::check_same_vocabulary(*m.tokenizer, *draft_.tokenizer);
    NBITS_CHECK(dv <= 0 || v <= 0 || dv <= v, "the draft model's logits have ", dv,
                " entries, more than the model's vocabulary of ", v);
    drafter_ = std::make_unique<speculative::DraftModel>(std::move(draft_.generator));
  }
  if (!m.generator->batchable())
    std::fputs(
        "note: this model's graph cannot verify drafts exactly (attention outside GroupQueryAttention): "
        "plain decoding\n",
        stderr);
  decoder_ = std::make_unique<speculative::SpeculativeDecoder>(*drafter_, max_draft, min_draft);
}

llm::DecodeLoop Speculation::loop() {
  if (!decoder_) return {};
  return [this](llm::Generator& g, std::span<const int32_t> ids, int64_t n, llm::Sampler& s,
                const std::function<bool(int32_t)>& on_token) {
    return decoder_->generate(g, ids, n, s, on_token);
  };
}

void Speculation::print_stats(FILE* out) const {
  if (!decoder_) return;
  const speculative::SpeculativeStats& st = decoder_->stats();
  std::fprintf(out,
               "speculative (%s): %lld model steps, %lld with drafts; %lld drafted, %lld accepted (%.0f%%); "
               "%lld forced by the constraint (%lld kept); draft length now %lld\n",
               drafter_->name(), static_cast<long long>(st.steps), static_cast<long long>(st.verify_steps),
               static_cast<long long>(st.drafted), static_cast<long long>(st.accepted),
               100.0 * st.acceptance(), static_cast<long long>(st.forced),
               static_cast<long long>(st.forced_kept),
               static_cast<long long>(decoder_->draft_length().next()));
  // What a step with each draft length cost here (drafting and the model's step), smoothed.
  std::string costs;
  const speculative::DraftLength& dl = decoder_->draft_length();
  for (int64_t k = 0; k <= dl.max_draft(); ++k) {
    if (dl.measured_ms(k) <= 0) continue;
    char buf[48];
    std::snprintf(buf, sizeof buf, " %lld:%.1f", static_cast<long long>(k), dl.measured_ms(k));
    costs += buf;
  }
  if (!costs.empty()) std::fprintf(out, "speculative step ms by draft length (draft:ms):%s\n", costs.c_str());
}

std::string Speculation::json() const {
  if (!decoder_) return "";
  const speculative::SpeculativeStats& st = decoder_->stats();
  char buf[256];
  std::snprintf(buf, sizeof buf,
                ",\"speculative\":{\"drafter\":\"%s\",\"steps\":%lld,\"verify_steps\":%lld,\"drafted\":%lld,"
                "\"accepted\":%lld,\"forced\":%lld,\"forced_kept\":%lld,\"step_ms_by_draft\":{",
                drafter_->name(), static_cast<long long>(st.steps), static_cast<long long>(st.verify_steps),
                static_cast<long long>(st.drafted), static_cast<long long>(st.accepted),
                static_cast<long long>(st.forced), static_cast<long long>(st.forced_kept));
  std::string out = buf;
  const speculative::DraftLength& dl = decoder_->draft_length();
  const char* sep = "";
  for (int64_t k = 0; k <= dl.max_draft(); ++k) {
    if (dl.measured_ms(k) <= 0) continue;
    std::snprintf(buf, sizeof buf, "%s\"%lld\":%.3f", sep, static_cast<long long>(k), dl.measured_ms(k));
    out += buf;
    sep = ",";
  }
  return out + "}}";
}

}  // namespace nbits::cli
