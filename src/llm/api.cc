// include/nbits/nbits.h over llm::Generator and the tokenizer.
#include <memory>

#include "base/error.h"
#include "base/mapped_file.h"
#include "llm/generator.h"
#include "nbits/nbits.h"
#include "tokenizer/tokenizer.h"

namespace nbits {

struct Model::Impl {
  std::unique_ptr<llm::Generator> generator;
  std::unique_ptr<Tokenizer> tokenizer;
};

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::~Model() = default;

std::unique_ptr<Model> Model::load(const std::string& dir, const ModelOptions& options) {
  auto impl = std::make_unique<Impl>();
  NBITS_CHECK(file_exists(dir + "/tokenizer.json"), "no tokenizer.json in ", dir);
  impl->tokenizer = std::make_unique<Tokenizer>(Tokenizer::load(dir));
  graph::SessionOptions so;
  so.threads = options.threads;
  so.accuracy_level = options.accuracy_level;
  so.profile = options.profile;
  so.fp16_scales = options.fp16_scales;
  impl->generator = llm::Generator::load(dir, so, options.context);
  return std::unique_ptr<Model>(new Model(std::move(impl)));
}

std::vector<int32_t> Model::encode(std::string_view text, bool add_special) const {
  return impl_->tokenizer->encode(text, add_special);
}
std::string Model::decode(const std::vector<int32_t>& ids) const {
  return impl_->tokenizer->decode(ids, true);
}
int64_t Model::context_length() const { return impl_->generator->capacity(); }

struct Generator::State {
  Model::Impl* m;
  GenerationOptions options;
  llm::Sampler sampler;
};

namespace {
llm::SamplerOptions sampler_options(const GenerationOptions& g, const llm::SearchConfig& s) {
  llm::SamplerOptions o;
  o.temperature = g.temperature.value_or(static_cast<float>(s.temperature));
  o.greedy = g.temperature ? *g.temperature == 0 : !s.do_sample || o.temperature == 0;
  o.top_k = g.top_k.value_or(s.top_k);
  o.top_p = g.top_p.value_or(static_cast<float>(s.top_p));
  o.min_p = g.min_p;
  o.repetition_penalty = g.repetition_penalty.value_or(static_cast<float>(s.repetition_penalty));
  o.seed = g.seed;
  return o;
}
}  // namespace

Generator::Generator(Model& model, const GenerationOptions& options)
    : s_(new State{&model.impl(), options,
                   llm::Sampler(sampler_options(options, model.impl().generator->config().search))}) {
  s_->m->generator->reset();
}
Generator::~Generator() = default;

GenerationResult Generator::generate(std::string_view text, const OnText& on_text) {
  llm::Generator& g = *s_->m->generator;
  const bool first = g.length() == 0 && g.pending() < 0;
  return generate_ids(s_->m->tokenizer->encode(text, first && s_->options.add_special), on_text);
}

GenerationResult Generator::generate_ids(const std::vector<int32_t>& ids, const OnText& on_text) {
  llm::Generator& g = *s_->m->generator;
  g.reset_stats();
  GenerationResult out;
  out.prompt_ids = ids;
  if (g.pending() >= 0) out.prompt_ids.insert(out.prompt_ids.begin(), g.pending());
  StreamDecoder stream(*s_->m->tokenizer, /*skip_special=*/true);
  auto r = g.generate(ids, s_->options.max_new_tokens, s_->sampler, [&](int32_t id) {
    std::string piece = stream.push(id);
    out.text += piece;
    if (on_text && !piece.empty()) on_text(piece);
    return true;
  });
  std::string tail = stream.flush();
  out.text += tail;
  if (on_text && !tail.empty()) on_text(tail);
  out.ids = std::move(r.ids);
  out.stopped_at_eos = r.stop == llm::StopReason::kEos;
  out.prefill_tok_s = g.stats().prefill_tok_s();
  out.decode_ms_per_token = g.stats().decode_ms_per_token();
  return out;
}

void Generator::reset() { s_->m->generator->reset(); }
int64_t Generator::length() const { return s_->m->generator->length(); }

}  // namespace nbits
