// include/nbits/nbits.h over llm::Generator and the tokenizer. The Model holds the
// loaded session as a prototype that is never run; each Generator runs a fork of it
// (graph::Session::fork: the ops and packed weights shared, its own buffers) with its
// own KV cache.
#include <algorithm>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>

#include "api/model_loader.h"
#include "base/error.h"
#include "gguf/model_builder.h"
#include "guidance/guidance.h"
#include "llm/generator.h"
#include "llm/stream_generate.h"
#include "nbits/nbits.h"
#include "speculative/draft_model.h"
#include "speculative/prompt_lookup.h"
#include "speculative/speculative_decode.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

namespace nbits {

class Model::Impl {
 public:
  llm::GenaiConfig config;
  std::unique_ptr<graph::Session> prototype;
  std::unique_ptr<Tokenizer> tokenizer;
  int64_t context = 0;
  guidance::Limits guidance_limits;

  const Tokenizer& tok() const {
    NBITS_CHECK(tokenizer != nullptr, "this model has no tokenizer (", config.dir,
                " has no tokenizer.json): give token ids");
    return *tokenizer;
  }

  // The guidance engine's index of the vocabulary, built on first use and shared.
  std::shared_ptr<const guidance::Vocabulary> guidance_vocabulary() const {
    std::lock_guard<std::mutex> lock(vocab_mu);
    if (!vocab) {
      const int64_t V = config.vocab_size > 0 ? config.vocab_size : tok().vocab_size();
      const std::vector<int32_t> eos(config.eos_token_ids.begin(), config.eos_token_ids.end());
      vocab = guidance::make_vocabulary(tok(), V, eos, guidance_limits);
    }
    return vocab;
  }

 private:
  mutable std::mutex vocab_mu;
  mutable std::shared_ptr<const guidance::Vocabulary> vocab;
};

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::~Model() = default;

std::shared_ptr<Model> Model::load(const std::string& path, const ModelOptions& options) {
  graph::SessionOptions so;
  so.threads = options.threads;
  so.accuracy_level = options.accuracy_level;
  so.profile = options.profile;
  so.fp16_scales = options.fp16_scales;
  so.kv_cache = options.kv_cache == ModelOptions::KvCache::kF16   ? graph::SessionOptions::KvCache::kF16
                : options.kv_cache == ModelOptions::KvCache::kF32 ? graph::SessionOptions::KvCache::kF32
                : options.kv_cache == ModelOptions::KvCache::kQ8  ? graph::SessionOptions::KvCache::kQ8
                                                                  : graph::SessionOptions::KvCache::kModel;
  NBITS_CHECK(options.requantize_float == 0 || options.requantize_float == 8 || options.requantize_float == 4,
              "ModelOptions::requantize_float must be 0, 8 or 4 (got ", options.requantize_float, ")");
  so.requantize_float = options.requantize_float;
  NBITS_CHECK(options.threads >= 0, "ModelOptions::threads must be >= 0 (got ", options.threads, ")");
  NBITS_CHECK(options.context >= 0, "ModelOptions::context must be >= 0 (got ", options.context, ")");
  // A GGUF's rope tables and LongRoPE choice are made for this context (model_loader.cc).
  if (gguf::is_gguf_path(path)) so.max_positions = options.context;
  api::LoadedModel m = api::load_model(path, so, /*need_tokenizer=*/false, options.variant);
  auto impl = std::make_unique<Impl>();
  impl->config = std::move(m.config);
  impl->prototype = std::move(m.session);
  impl->tokenizer = std::move(m.tokenizer);
  NBITS_CHECK(options.guidance_mask_ms >= 0 && options.guidance_grammar_size >= 0,
              "ModelOptions::guidance_mask_ms and guidance_grammar_size must be >= 0");
  impl->guidance_limits = {options.guidance_mask_ms, options.guidance_grammar_size};
  impl->context = options.context > 0 ? std::min(options.context, impl->config.context_length)
                                      : impl->config.default_max_length();
  return std::shared_ptr<Model>(new Model(std::move(impl)));
}

bool Model::has_tokenizer() const { return impl_->tokenizer != nullptr; }

std::vector<int32_t> Model::encode(std::string_view text, bool add_special) const {
  return impl_->tok().encode(text, add_special);
}

std::string Model::decode(std::span<const int32_t> ids, bool skip_special) const {
  return impl_->tok().decode(std::vector<int32_t>(ids.begin(), ids.end()), skip_special);
}

std::string Model::apply_chat_template(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                       const std::string& tools_json) const {
  return render_chat(impl_->tok(), messages, add_generation_prompt, std::nullopt, tools_json);
}

std::string Model::chat_template() const { return impl_->tokenizer ? impl_->tokenizer->chat_template() : ""; }

int64_t Model::context_length() const { return impl_->context; }
int64_t Model::max_context_length() const { return impl_->config.context_length; }
int64_t Model::vocab_size() const {
  if (impl_->config.vocab_size > 0) return impl_->config.vocab_size;
  return impl_->tokenizer ? impl_->tokenizer->vocab_size() : 0;
}
std::vector<int32_t> Model::eos_token_ids() const {
  return std::vector<int32_t>(impl_->config.eos_token_ids.begin(), impl_->config.eos_token_ids.end());
}
bool Model::is_eos(int32_t id) const { return impl_->config.is_eos(id); }
std::optional<int32_t> Model::bos_token_id() const {
  if (impl_->config.bos_token_id) return static_cast<int32_t>(*impl_->config.bos_token_id);
  if (impl_->tokenizer && impl_->tokenizer->bos_id() >= 0) return impl_->tokenizer->bos_id();
  return std::nullopt;
}
std::optional<int32_t> Model::pad_token_id() const {
  if (impl_->config.pad_token_id) return static_cast<int32_t>(*impl_->config.pad_token_id);
  return std::nullopt;
}
int32_t Model::token_to_id(std::string_view token) const { return impl_->tok().token_to_id(token); }
std::string Model::model_type() const { return impl_->config.model_type; }

std::string Model::check_guidance(std::string_view type, std::string_view data) const {
  guidance::Spec spec;
  try {
    spec = guidance::make_spec(type, std::string(data));
  } catch (const Error& e) {
    return e.what();
  }
  return guidance::check(*impl_->guidance_vocabulary(), spec);
}

bool guidance_available() { return guidance::available(); }
std::string guidance_engine() { return guidance::engine(); }
size_t Model::weight_bytes() const { return impl_->prototype->weight_bytes(); }

// --- TokenStream ---

struct TokenStream::State {
  std::shared_ptr<const Model> model;
  StreamDecoder decoder;
};

TokenStream::TokenStream(std::shared_ptr<const Model> model, bool skip_special) {
  NBITS_CHECK(model != nullptr, "TokenStream: no model");
  const Tokenizer& tok = model->impl_->tok();
  s_.reset(new State{std::move(model), StreamDecoder(tok, skip_special)});
}
TokenStream::~TokenStream() = default;
std::string TokenStream::push(int32_t id) { return s_->decoder.push(id); }
std::string TokenStream::flush() { return s_->decoder.flush(); }

// --- Generator ---

namespace {

llm::SamplerOptions sampler_options(const GenerationOptions& g, const llm::SearchConfig& s) {
  llm::SamplerOptions o;
  o.temperature = g.temperature.value_or(static_cast<float>(s.temperature));
  const bool sample = g.do_sample.value_or(g.temperature ? *g.temperature > 0 : s.do_sample);
  o.greedy = !sample || o.temperature == 0;
  o.top_k = g.top_k.value_or(s.top_k);
  o.top_p = g.top_p.value_or(static_cast<float>(s.top_p));
  o.min_p = g.min_p;
  o.repetition_penalty = g.repetition_penalty.value_or(static_cast<float>(s.repetition_penalty));
  o.presence_penalty = g.presence_penalty;
  o.frequency_penalty = g.frequency_penalty;
  o.logit_bias = g.logit_bias;
  o.seed = g.seed;
  return o;
}

void check_options(const GenerationOptions& g) {
  NBITS_CHECK(g.max_new_tokens >= 0, "max_new_tokens must be >= 0 (got ", g.max_new_tokens, ")");
  NBITS_CHECK(!g.max_length || *g.max_length >= 1, "max_length must be >= 1 (got ", g.max_length.value_or(0),
              ")");
  NBITS_CHECK(!g.temperature || *g.temperature >= 0, "temperature must be >= 0 (got ", *g.temperature, ")");
  NBITS_CHECK(!g.top_k || *g.top_k >= 0, "top_k must be >= 0 (got ", *g.top_k, ")");
  NBITS_CHECK(!g.top_p || (*g.top_p > 0 && *g.top_p <= 1), "top_p must be in (0, 1] (got ", *g.top_p, ")");
  NBITS_CHECK(g.min_p >= 0 && g.min_p <= 1, "min_p must be in [0, 1] (got ", g.min_p, ")");
  NBITS_CHECK(!g.repetition_penalty || *g.repetition_penalty > 0, "repetition_penalty must be > 0 (got ",
              *g.repetition_penalty, ")");
  NBITS_CHECK(g.context >= 0, "context must be >= 0 (got ", g.context, ")");
  NBITS_CHECK(g.presence_penalty >= -2 && g.presence_penalty <= 2,
              "presence_penalty must be in [-2, 2] (got ", g.presence_penalty, ")");
  NBITS_CHECK(g.frequency_penalty >= -2 && g.frequency_penalty <= 2,
              "frequency_penalty must be in [-2, 2] (got ", g.frequency_penalty, ")");
  for (const auto& [id, bias] : g.logit_bias)
    NBITS_CHECK(id >= 0 && bias >= -100 && bias <= 100, "logit_bias: token ", id, " bias ", bias,
                ": ids are >= 0, biases in [-100, 100]");
  NBITS_CHECK(g.speculative.empty() || g.speculative == "lookup" || g.speculative == "draft",
              "speculative must be \"\", \"lookup\" or \"draft\" (got \"", g.speculative, "\")");
  NBITS_CHECK(g.speculative != "draft" || g.draft_model != nullptr,
              "speculative \"draft\" needs a draft_model");
  NBITS_CHECK(g.draft_max >= 1 && g.draft_max <= 32, "draft_max must be in [1, 32] (got ", g.draft_max, ")");
  NBITS_CHECK(g.lookup_ngram >= 1 && g.lookup_ngram <= 16, "lookup_ngram must be in [1, 16] (got ",
              g.lookup_ngram, ")");
  NBITS_CHECK(g.draft_min >= 0 && g.draft_min <= g.draft_max, "draft_min must be in [0, draft_max] (got ",
              g.draft_min, ")");
}

}  // namespace

struct Generator::State {
  std::shared_ptr<const Model> model;
  GenerationOptions options;
  std::unique_ptr<llm::Generator> gen;
  llm::Sampler sampler;
  int64_t max_length = 0;
  int32_t next = -1;                              // last sampled
  bool eos = false;                               // `next` is an eos token
  std::unique_ptr<speculative::Drafter> drafter;  // options.speculative
  std::unique_ptr<speculative::SpeculativeDecoder> spec;
  bool guide_used = false;  // the sampler's constraint has drawn (or a reply began with it)
  // Drawn by a speculative step, not yet handed out by generate_next_token (the cache holds
  // the ones before the last; sequence() and length() end at `next`).
  std::deque<std::pair<int32_t, llm::Rng>> ahead;  // each with the random stream after its draw
  llm::Rng next_rng;                               // the random stream after `next` was drawn
  bool logits_spent = false;  // the last model step verified a draft: no single logits row

  void set_speculation();
  // The next token: one handed out from `ahead`, else a speculative step (options.speculative)
  // or a plain one.
  void draw();
  // Drops the tokens drawn ahead: the cache ends before `next`, which is pending again, as
  // after plain decode.
  void settle();
  // A fresh constraint for options.guidance_* on the sampler (none when off).
  void set_guidance();

  const Model::Impl& m() const { return *model->impl_; }
  int64_t length() const {
    return gen->length() + (gen->pending() >= 0 ? 1 : 0) - static_cast<int64_t>(ahead.size());
  }
};

void Generator::State::set_speculation() {
  spec.reset();
  drafter.reset();
  if (options.speculative.empty()) {
    // Constrained decoding: the tokens the spec forces run in verify steps (fast-forward).
    if (!options.guidance_type.empty() && options.fast_forward) {
      drafter = std::make_unique<speculative::NoDrafts>();
      spec = std::make_unique<speculative::SpeculativeDecoder>(*drafter, 0);
    }
    return;
  }
  if (options.speculative == "lookup") {
    drafter = std::make_unique<speculative::PromptLookup>(std::min<int64_t>(2, options.lookup_ngram),
                                                          options.lookup_ngram);
  } else {
    const Model::Impl& d = *options.draft_model->impl_;
    if (m().tokenizer && d.tokenizer) speculative::check_same_vocabulary(*m().tokenizer, *d.tokenizer);
    drafter = std::make_unique<speculative::DraftModel>(
        std::make_unique<llm::Generator>(d.config, d.prototype->fork(), gen->capacity()));
  }
  spec = std::make_unique<speculative::SpeculativeDecoder>(*drafter, options.draft_max, options.draft_min,
                                                           options.fast_forward);
}

void Generator::State::draw() {
  if (ahead.empty() && spec && gen->batchable() && gen->pending() >= 0 && !gen->has_logits()) {
    const int64_t room = max_length - length();  // >= 1: not done
    const int64_t verified = spec->stats().verify_steps;
    spec->step(*gen, sampler, room, [this](int32_t t, int64_t) {
      ahead.emplace_back(t, sampler.rng());
      return !m().config.is_eos(t);
    });
    logits_spent = spec->stats().verify_steps != verified;
  }
  if (!ahead.empty()) {
    next = ahead.front().first;
    next_rng = ahead.front().second;
    ahead.pop_front();
  } else {
    auto r = gen->generate({}, 1, sampler);
    NBITS_ASSERT(r.ids.size() == 1);
    next = r.ids[0];
    logits_spent = false;
  }
  eos = m().config.is_eos(next);
}

void Generator::State::settle() {
  if (ahead.empty()) return;
  // The presence / frequency counts need no undoing: every caller appends (forget_drawn)
  // or replaces the sampler before the next draw. A constraint heard the tokens: it forgets them.
  if (const auto& c = sampler.constraint()) c->rollback(static_cast<int64_t>(ahead.size()));
  sampler.restore_rng(next_rng);
  gen->keep(length() - 1, next);
  ahead.clear();
}

void Generator::State::set_guidance() {
  guide_used = false;
  if (options.guidance_type.empty()) {
    sampler.set_constraint(nullptr);
    return;
  }
  const guidance::Spec g = guidance::make_spec(options.guidance_type, options.guidance_data);
  sampler.set_constraint(guidance::make_constraint(m().guidance_vocabulary(), g));
}

Generator::Generator(std::shared_ptr<const Model> model, const GenerationOptions& options) {
  NBITS_CHECK(model != nullptr, "Generator: no model");
  check_options(options);
  const Model::Impl& m = *model->impl_;
  const int64_t ctx = options.context > 0 ? std::min(options.context, m.config.context_length) : m.context;
  auto gen = std::make_unique<llm::Generator>(m.config, m.prototype->fork(), ctx);
  llm::Sampler sampler(sampler_options(options, m.config.search));
  s_.reset(new State{std::move(model),
                     options,
                     std::move(gen),
                     std::move(sampler),
                     0,
                     -1,
                     false,
                     nullptr,
                     nullptr,
                     false,
                     {},
                     llm::Rng(0),
                     false});
  s_->max_length = std::min(options.max_length.value_or(s_->gen->capacity()), s_->gen->capacity());
  s_->set_speculation();
  s_->set_guidance();
}
Generator::~Generator() = default;

void Generator::set_options(const GenerationOptions& options) {
  check_options(options);
  s_->settle();
  s_->sampler = llm::Sampler(sampler_options(options, s_->m().config.search));
  const bool same_drafter =
      options.speculative == s_->options.speculative && options.draft_model == s_->options.draft_model &&
      options.draft_max == s_->options.draft_max && options.draft_min == s_->options.draft_min &&
      options.lookup_ngram == s_->options.lookup_ngram &&
      options.guidance_type.empty() == s_->options.guidance_type.empty() &&
      options.fast_forward == s_->options.fast_forward;
  s_->options = options;
  s_->max_length = std::min(options.max_length.value_or(s_->gen->capacity()), s_->gen->capacity());
  if (!same_drafter) s_->set_speculation();
  s_->set_guidance();
}

void Generator::append_tokens(std::span<const int32_t> ids) {
  NBITS_CHECK(!ids.empty(), "append_tokens: no tokens given");
  s_->settle();
  llm::Generator& g = *s_->gen;
  std::vector<int32_t> run;
  run.reserve(ids.size() + 1);
  if (g.pending() >= 0) run.push_back(g.pending());
  run.insert(run.end(), ids.begin(), ids.end());
  g.append(run);
  s_->logits_spent = false;
  s_->sampler.forget_drawn();
  s_->eos = false;
}

void Generator::generate_next_token() {
  NBITS_CHECK(!is_done(), "generate_next_token: the generator is done (",
              s_->eos ? "an eos token was sampled" : "the sequence reached max_length", ")");
  const llm::Generator& g = *s_->gen;
  NBITS_CHECK(!s_->ahead.empty() || g.pending() >= 0 || !g.last_logits().empty(),
              "generate_next_token: nothing to generate from (call append_tokens first)");
  s_->guide_used = true;
  s_->draw();
}

void generate_next_tokens(std::span<Generator* const> generators) {
  std::vector<llm::Generator*> run;
  run.reserve(generators.size());
  for (size_t i = 0; i < generators.size(); ++i) {
    const Generator* g = generators[i];
    NBITS_CHECK(g != nullptr, "generate_next_tokens: generator ", i, " is null");
    for (size_t j = 0; j < i; ++j)
      NBITS_CHECK(generators[j] != g, "generate_next_tokens: generator ", i, " is also generator ", j);
    NBITS_CHECK(g->s_->model == generators[0]->s_->model, "generate_next_tokens: generator ", i,
                " is on another Model than generator 0");
    NBITS_CHECK(!g->is_done(), "generate_next_tokens: generator ", i, " is done (",
                g->s_->eos ? "an eos token was sampled" : "the sequence reached max_length", ")");
    const llm::Generator& lg = *g->s_->gen;
    const bool ahead = !g->s_->ahead.empty();
    NBITS_CHECK(ahead || lg.pending() >= 0 || lg.has_logits(), "generate_next_tokens: generator ", i,
                " has nothing to generate from (call append_tokens first)");
    if (!ahead && lg.pending() >= 0) run.push_back(g->s_->gen.get());
  }
  // Several rows to run: one batched plain step (speculation stands down, the batch fills the
  // kernels' rows). One: its own step, speculative where its options say so.
  if (run.size() > 1) llm::Generator::append_pending(run);
  for (Generator* g : generators) {
    g->s_->guide_used = true;
    g->s_->draw();
  }
}

bool Generator::is_done() const { return s_->eos || s_->length() >= s_->max_length; }
int32_t Generator::next_token() const { return s_->next; }
std::span<const float> Generator::logits() const {
  if (s_->logits_spent) return {};
  return s_->gen->last_logits();
}

std::vector<int32_t> Generator::sequence() const {
  std::vector<int32_t> seq(s_->gen->tokens().begin(), s_->gen->tokens().end());
  if (s_->gen->pending() >= 0) seq.push_back(s_->gen->pending());
  seq.resize(static_cast<size_t>(s_->length()));  // not the tokens drawn ahead
  return seq;
}

void Generator::rewind_to(int64_t length) {
  NBITS_CHECK(length >= 0 && length <= s_->length(), "rewind_to(", length, "): the sequence has ",
              s_->length(), " tokens");
  s_->settle();
  if (length == s_->length()) return;
  s_->gen->truncate(length);
  s_->logits_spent = false;
  s_->eos = false;
  s_->next = -1;
}

GenerationResult Generator::generate(std::string_view text, const OnText& on_text) {
  const bool first = s_->length() == 0;
  return generate_ids(s_->m().tok().encode(text, first && s_->options.add_special), on_text);
}

GenerationResult Generator::generate_ids(std::span<const int32_t> ids, const OnText& on_text) {
  s_->settle();
  llm::Generator& g = *s_->gen;
  g.reset_stats();
  s_->sampler.forget_drawn();
  if (s_->guide_used) s_->set_guidance();  // each reply matches the spec on its own
  s_->guide_used = s_->sampler.constraint() != nullptr;
  GenerationResult out;
  if (g.pending() >= 0) out.prompt_ids.push_back(g.pending());
  out.prompt_ids.insert(out.prompt_ids.end(), ids.begin(), ids.end());
  std::optional<StreamDecoder> stream;
  if (s_->m().tokenizer) stream.emplace(*s_->m().tokenizer, /*skip_special=*/true);
  const int64_t room = s_->max_length - s_->length() - static_cast<int64_t>(ids.size());
  const int64_t n = std::max<int64_t>(0, std::min(s_->options.max_new_tokens, room));
  llm::DecodeLoop loop;
  if (s_->spec)
    loop = [this](llm::Generator& gen, std::span<const int32_t> in, int64_t max, llm::Sampler& s,
                  const std::function<bool(int32_t)>& on_token) {
      return s_->spec->generate(gen, in, max, s, on_token);
    };
  const int64_t verified = s_->spec ? s_->spec->stats().verify_steps : 0;
  llm::TextResult tr =
      llm::generate_text(g, ids, n, s_->sampler, stream ? &*stream : nullptr, on_text, {}, loop);
  s_->logits_spent = s_->spec && s_->spec->stats().verify_steps != verified;
  const llm::GenerateResult& r = tr.generated;
  out.text = std::move(tr.text);
  out.ids = r.ids;
  if (!out.ids.empty()) {
    s_->next = out.ids.back();
    s_->eos = r.stop == llm::StopReason::kEos;
  }
  out.stopped_at_eos = r.stop == llm::StopReason::kEos;
  out.prefill_tok_s = g.stats().prefill_tok_s();
  out.decode_ms_per_token = g.stats().decode_ms_per_token();
  return out;
}

void Generator::reset() {
  s_->ahead.clear();
  s_->logits_spent = false;
  s_->gen->reset();
  s_->next = -1;
  s_->eos = false;
}
int64_t Generator::length() const { return s_->length(); }
SpeculationStats Generator::speculation_stats() const {
  if (!s_->spec) return {};
  const speculative::SpeculativeStats& st = s_->spec->stats();
  return {st.steps,  st.verify_steps, st.drafted, st.accepted, s_->spec->draft_length().next(),
          st.forced, st.forced_kept};
}
int64_t Generator::capacity() const { return s_->gen->capacity(); }
size_t Generator::kv_cache_bytes() const { return s_->gen->kv_cache_bytes(); }
const Model& Generator::model() const { return *s_->model; }

}  // namespace nbits
