// nbits public API: load a model once, run any number of conversations on it.
//
//   auto model = nbits::Model::load("models/qwen2.5-0.5b-int4");   // or a .gguf file
//   nbits::GenerationOptions go;
//   go.max_new_tokens = 64;
//   nbits::Generator gen(model, go);
//   auto r = gen.generate("Once upon a time", [](std::string_view piece) { std::fwrite(...); });
//   auto r2 = gen.generate(" And then");   // continues on the same KV cache
//
// Token level, with onnxruntime-genai's names:
//   nbits::Generator g(model, go);
//   g.append_tokens(model->encode("Hello"));
//   while (!g.is_done()) { g.generate_next_token(); use(g.next_token()); }
//
// Threads: a Model is immutable once loaded and may be shared by many Generators used
// from different threads at once (each Generator owns its KV cache and scratch). One
// Generator must be used by one thread at a time. The Model's worker threads
// (ModelOptions::threads) are shared: Generators running at once take turns for each
// parallel section of a step.
//
// Errors throw nbits::Error (a std::runtime_error) with one line naming the problem.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nbits/chat_message.h"
#include "nbits/error.h"

namespace nbits {

struct ModelOptions {
  int threads = 0;                    // worker threads incl. the caller; 0 = all hardware threads
  std::optional<int> accuracy_level;  // override every MatMulNBits (4 = int8 activations)
  // Default KV cache length; 0 = the config's max_length / context_length. For a GGUF also the most
  // a Generator may ask for: its rope tables and phi3's LongRoPE long/short choice are made for it,
  // as llama.cpp's are for its context size.
  int64_t context = 0;
  bool profile = false;  // per-node timings (the CLI's --profile)
  // Store MatMulNBits scales as fp16 (~2^-11 relative per scale; ~10% fewer bytes
  // per token for int4 block 32). Default fp32: exact agreement with ONNX Runtime.
  bool fp16_scales = false;
  // KV cache dtype: as the model declares, or fp32 / fp16 whatever it declares, or kQ8: int8 rows
  // with one fp32 scale per (kv head, position) (3.8x fewer bytes than fp32 at head 64, ~1e-2
  // relative error per value; GroupQueryAttention models only, others refuse it at load).
  enum class KvCache { kModel, kF32, kF16, kQ8 };
  KvCache kv_cache = KvCache::kModel;
  // 0, or 8 / 4: re-quantize constant float (fp32/fp16/bf16) MatMul weights at load into
  // symmetric 8/4-bit blocks of 32 (the float lm_head of onnx-community q4 exports).
  int requantize_float = 0;
  // A Hugging Face Optimum / transformers.js folder: which onnx/model_<variant>.onnx
  // (q4, q4f16, int8, uint8, quantized, fp16, fp32); "" = the first present in that order.
  std::string variant;
  // Constrained decoding's budgets (0: the engine's default): the work one token's mask may take, in
  // milliseconds of llguidance's rated speed (default about 14 ms), and the most symbols a schema or
  // grammar may compile to (default 500,000). A spec past either fails with the engine's message.
  double guidance_mask_ms = 0;
  int64_t guidance_grammar_size = 0;
};

// Unset fields take the model's defaults (genai_config.json "search", GGUF: greedy).
class Model;

struct GenerationOptions {
  int64_t max_new_tokens = 128;       // generate() stops after this many tokens
  std::optional<int64_t> max_length;  // is_done() once the sequence (prompt + generated) is this long
  std::optional<bool> do_sample;      // sample (at the config's temperature unless given); false = greedy
  std::optional<float> temperature;   // 0 = greedy
  std::optional<int64_t> top_k;
  std::optional<float> top_p;
  float min_p = 0.0f;
  std::optional<float> repetition_penalty;
  // OpenAI's penalties over the tokens generated since the last append_tokens / generate call:
  // logit -= frequency_penalty * count + presence_penalty * (count > 0); each in [-2, 2].
  float presence_penalty = 0.0f;
  // OpenAI's logit_bias: (token id, bias in [-100, 100]) added to that token's logit after the
  // penalties, greedy too (-100 bans a token).
  std::vector<std::pair<int32_t, float>> logit_bias;
  float frequency_penalty = 0.0f;
  uint64_t seed = 0;
  bool add_special = true;  // BOS etc. on the first text of a conversation
  int64_t context = 0;      // this Generator's KV cache length; 0 = ModelOptions::context
  // Speculative decoding in generate() / generate_ids() and generate_next_token(): "" = off;
  // "lookup" = drafts from the prompt and the text so far; "draft" = drafts from draft_model (a
  // Model of the same tokenizer). The tokens are plain decoding's (exact verification): only the
  // speed changes. generate_next_token() then runs a step only when the tokens one verify step
  // drew are all handed out; generate_next_tokens() drafts when a single row runs (a batch of
  // several fills the kernels' rows itself).
  std::string speculative;
  std::shared_ptr<const Model> draft_model;
  int64_t draft_max = 8;  // the longest draft; the length adapts below it to what pays
  int64_t draft_min = 0;  // the shortest (= draft_max: a fixed length, for measurements)
  // "lookup": the longest suffix of the sequence looked up (backing off to 2 tokens, or 1).
  int64_t lookup_ngram = 4;
  // Constrained decoding (onnxruntime-genai's set_guidance): every token drawn keeps the reply a
  // prefix of the language guidance_data describes, and a reply ends (an eos token) only where it
  // is complete. guidance_type: "" = off; "json_schema" (data: a JSON schema), "json_object" (any
  // JSON object; data unused), "regex" (Rust regex syntax), "lark" (llguidance's Lark dialect).
  // generate() / generate_ids() start each reply afresh; generate_next_token() follows it from
  // set_options() (or construction) on. The tokens the spec forces (text it allows in one way
  // only) run in one verify step, and guidance combines with speculative (the drafts follow the
  // forced tokens); the tokens are still those plain constrained decoding draws.
  // guidance_available() says whether this build has the engine.
  std::string guidance_type;
  std::string guidance_data;
  // false: the forced tokens run one plain step each (slower), so that every token has its
  // logits() (the server's logprobs of a constrained reply).
  bool fast_forward = true;
};

// Whether this build can do constrained decoding (GenerationOptions::guidance_type), and the
// engine's name and version, or why there is none.
bool guidance_available();
std::string guidance_engine();

// Speculative decoding's work since the drafter was set up (GenerationOptions::speculative, and
// guidance's forced tokens).
struct SpeculationStats {
  int64_t steps = 0;         // model steps after a reply's first token (verify or plain)
  int64_t verify_steps = 0;  // of which verified a draft
  int64_t drafted = 0;       // draft tokens verified
  int64_t accepted = 0;      // of those, the model's own choice
  int64_t draft_length = 0;  // the draft length the next step tries (adaptive; 0 = a plain step)
  int64_t forced = 0;        // guidance: tokens the spec forced, run in verify steps
  int64_t forced_kept = 0;   // of those, drawn as forced (a different tokenization is not)
};

struct GenerationResult {
  std::vector<int32_t> prompt_ids;  // the tokens prefilled for this call
  std::vector<int32_t> ids;         // generated
  std::string text;                 // generated, decoded
  bool stopped_at_eos = false;
  double prefill_tok_s = 0, decode_ms_per_token = 0;
};

class Generator;
class TokenStream;
void generate_next_tokens(std::span<Generator* const> generators);

class Model {
 public:
  // PATH: an onnxruntime-genai folder (genai_config.json, the model file it names,
  // tokenizer.json), a model.onnx inside one, or a .gguf file.
  static std::shared_ptr<Model> load(const std::string& path, const ModelOptions& options = {});
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  bool has_tokenizer() const;  // false for a folder without tokenizer.json (ids only)
  std::vector<int32_t> encode(std::string_view text, bool add_special = true) const;
  std::string decode(std::span<const int32_t> ids, bool skip_special = true) const;
  // The model's chat template (transformers' apply_chat_template), rendered to text.
  // tools_json: "" or a JSON array of OpenAI tool objects ({"type": "function", "function":
  // {name, description, parameters}}), given to the template as `tools`.
  std::string apply_chat_template(const std::vector<ChatMessage>& messages, bool add_generation_prompt = true,
                                  const std::string& tools_json = "") const;
  // The chat template's text ("" when the model has none).
  std::string chat_template() const;

  int64_t context_length() const;      // default KV capacity of a Generator, in tokens
  int64_t max_context_length() const;  // the most the model supports
  int64_t vocab_size() const;
  std::vector<int32_t> eos_token_ids() const;
  std::optional<int32_t> bos_token_id() const;
  std::optional<int32_t> pad_token_id() const;
  int32_t token_to_id(std::string_view token) const;  // -1 when the vocabulary has no such token
  bool is_eos(int32_t id) const;
  std::string model_type() const;  // "qwen2", "llama", ...
  size_t weight_bytes() const;     // packed weights + other initializers in use
  // Compiles a guidance spec (GenerationOptions::guidance_type / _data) for this model's
  // vocabulary without generating: "" when it compiles, else why not (an invalid schema, an
  // unknown type, a grammar over the engine's limits). Throws when the build has no engine.
  std::string check_guidance(std::string_view type, std::string_view data) const;

  class Impl;

 private:
  friend class Generator;
  friend class TokenStream;
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Turns generated ids into text as they come: push() returns the text that became
// complete (never half a UTF-8 character), flush() whatever is left.
class TokenStream {
 public:
  explicit TokenStream(std::shared_ptr<const Model> model, bool skip_special = true);
  ~TokenStream();
  TokenStream(const TokenStream&) = delete;
  TokenStream& operator=(const TokenStream&) = delete;
  std::string push(int32_t id);
  std::string flush();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// One conversation: its own KV cache on a shared Model.
class Generator {
 public:
  explicit Generator(std::shared_ptr<const Model> model, const GenerationOptions& options = {});
  ~Generator();
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;

  // New sampling options (and max_new_tokens / max_length) for what comes next; the KV cache
  // and the sequence stay (a server's session, one request after another). `context` is ignored.
  void set_options(const GenerationOptions& options);

  // --- token level (onnxruntime-genai's Generator) ---
  // Runs `ids` on top of the cache (after the token generate_next_token() sampled last).
  void append_tokens(std::span<const int32_t> ids);
  // Runs the last sampled token if any, then samples the next one from the logits.
  void generate_next_token();
  // An eos token was sampled, or the sequence reached max_length or the KV capacity.
  bool is_done() const;
  int32_t next_token() const;  // the token generate_next_token() sampled last (-1 before)
  // Logits of the last position run, [vocab_size()] (what the next sample is drawn from,
  // before any sampling transform). Valid until the next call that runs the model: the
  // memory may move then (a longer step grows the buffers), so keep a copy, not the span.
  // Empty after a speculative verify step (it drew several tokens from rows not kept).
  std::span<const float> logits() const;
  std::vector<int32_t> sequence() const;  // every token: appended and generated
  void rewind_to(int64_t length);         // keep the first `length` tokens of sequence()

  // --- text level ---
  using OnText = std::function<void(std::string_view)>;
  // Prefills `text` (only the new tokens: the cache keeps what came before) and generates
  // up to max_new_tokens, streaming the text to on_text.
  GenerationResult generate(std::string_view text, const OnText& on_text = {});
  GenerationResult generate_ids(std::span<const int32_t> ids, const OnText& on_text = {});

  void reset();                                // forget the conversation
  int64_t length() const;                      // tokens in sequence()
  SpeculationStats speculation_stats() const;  // zeros when speculation is off
  int64_t capacity() const;                    // KV capacity in tokens
  size_t kv_cache_bytes() const;
  const Model& model() const;

 private:
  friend void generate_next_tokens(std::span<Generator* const> generators);
  struct State;
  std::unique_ptr<State> s_;
};

// generate_next_token() for each of `generators` (of one Model, none of them used by another
// thread meanwhile) as ONE batched step: the tokens they sampled last run together in one pass
// of the model with batch generators.size(), each row on its own KV cache and position (a decode
// step reads every weight once; B sessions stepping together cost little more than one), then
// each samples its next token with its own options and seed. Every Generator ends as after its
// own generate_next_token(): the same next_token(), sequence() and logits() (a row's logits do
// not depend on the other rows: within float rounding of the batch-1 step, see docs/design.md).
// Models whose graph cannot take a batch (docs/design.md, serve) and Generators of another
// context length than the first step one by one. Throws, before anything runs, when one is
// null, listed twice, of another Model, done, or has nothing to generate from.
void generate_next_tokens(std::span<Generator* const> generators);

}  // namespace nbits
