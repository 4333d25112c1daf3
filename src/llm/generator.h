// Generator: one decoder Session plus its KV cache, driven like
// onnxruntime-genai. With past_present_share_buffer (GroupQueryAttention
// exports): per layer one K and one V buffer [1, Nkv, max_length, H] bound as
// BOTH past_key_values.i.* and present.i.*. Without it (MultiHeadAttention
// exports, present = Concat(past, new)): two buffers per K/V, past [1,Nkv,T,H]
// read from one and present [1,Nkv,T+S,H] written to the other, swapped after
// each step. The cache keeps the graph's dtype (fp16 exports: half the bytes);
// position_ids are fed when the graph has them. A prompt (or a chat turn) is
// prefilled in one step on top of whatever the cache holds; then one token per
// step. Allocates nothing per decode step once warmed up.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "graph/session.h"
#include "llm/genai_config.h"
#include "llm/sampler.h"

namespace nbits::llm {

// Timings of the work done since the last reset_stats().
struct GenerationStats {
  int64_t prefill_tokens = 0;
  double prefill_ms = 0;
  int64_t decode_tokens = 0;  // single-token steps
  double decode_ms = 0;       // includes sampling
  int64_t batch_rows = 0;     // tokens run as a row of a batched step (append_pending)
  double prefill_tok_s() const { return prefill_ms > 0 ? prefill_tokens * 1e3 / prefill_ms : 0; }
  double decode_ms_per_token() const { return decode_tokens > 0 ? decode_ms / decode_tokens : 0; }
};

enum class StopReason { kEos, kMaxTokens, kContextFull, kCallback };

struct GenerateResult {
  std::vector<int32_t> ids;  // generated tokens (an eos that stopped generation included)
  StopReason stop = StopReason::kMaxTokens;
};

class Generator;
// A decode loop with Generator::generate's contract (speculative::SpeculativeDecoder plugs in
// here); empty = Generator::generate.
using DecodeLoop = std::function<GenerateResult(Generator&, std::span<const int32_t>, int64_t, Sampler&,
                                                const std::function<bool(int32_t)>&)>;

class Generator {
 public:
  // Binds the session's KV inputs/outputs named by `config`. max_length: KV
  // capacity in tokens (0 = config.default_max_length(); capped by context_length).
  Generator(const GenaiConfig& config, std::unique_ptr<graph::Session> session, int64_t max_length = 0);
  // Loads the model config of PATH (a genai folder, an Optimum folder or a decoder .onnx
  // inside one: llm::load_model_config) and the decoder it names.
  static std::unique_ptr<Generator> load(const std::string& dir, const graph::SessionOptions& options = {},
                                         int64_t max_length = 0);

  // Runs `ids` on top of the cache and returns the logits of the last position (valid
  // until the next call). Throws when they do not fit. A prompt longer than
  // prefill_chunk() runs in steps of near-equal length, at most that long, each on the
  // cache the ones before wrote (the same logits), so the activations of one step, not
  // of the whole prompt, bound the memory; if a step throws, the steps before it stay cached.
  std::span<const float> append(std::span<const int32_t> ids);
  static constexpr int64_t kPrefillChunk = 512;
  int64_t prefill_chunk() const { return prefill_chunk_; }
  // Tokens per prefill step (>= 1), or 0: every prompt in one step.
  void set_prefill_chunk(int64_t tokens);
  // The same step, but returns the logits of every position of `ids`: row i
  // (vocab_size() floats, row-major [ids.size(), vocab_size()]) is the
  // distribution after ids[i]. For perplexity and teacher forcing; the lm_head
  // runs on all S rows for this step only. Valid until the next call.
  std::span<const float> append_all_logits(std::span<const int32_t> ids);
  // A speculative verify step: like append_all_logits, but every position is attended as a
  // one-token decode step at that position would be (graph::Session::set_positions_as_decode),
  // so row i is bit for bit the logits one-token decode gives after ids[i]. Valid until the
  // next call. Follow with keep() to drop the rejected tail.
  std::span<const float> verify(std::span<const int32_t> ids);
  // Keeps the first n cached tokens and makes `next` the pending token: what a verify step
  // leaves once its accepted prefix is known (next: the token sampled after that prefix).
  void keep(int64_t n, int32_t next);
  // Adds speculative decode work to stats() (tokens produced and the time they took).
  void count_decode(int64_t tokens, double ms) {
    stats_.decode_tokens += tokens;
    stats_.decode_ms += ms;
  }

  // Logits of the last position run (what generate() sampled from last, before
  // any sampling transform); empty before the first step. Valid until the next step.
  std::span<const float> last_logits() const { return last_logits_; }

  // Appends `new_ids` (which may be empty if a pending token or earlier append
  // left logits), then samples up to max_new_tokens, stopping at an eos id.
  // on_token(id) is called for every generated token; returning false stops.
  // The last generated token is not run (it becomes pending(): the next
  // generate() feeds it first).
  GenerateResult generate(std::span<const int32_t> new_ids, int64_t max_new_tokens, Sampler& sampler,
                          const std::function<bool(int32_t)>& on_token = {});

  // Samples the next token from the last step's logits (what generate() does after each
  // step); it becomes pending(). Throws when no step left logits to sample from.
  int32_t sample_next(Sampler& sampler);

  // Runs the pending token of every generator in `gens` (of one load and capacity, each with a
  // pending token, no two alike) as ONE session run with batch gens.size(): input_ids [B, 1],
  // each row's own position and past length (attention_mask row b: length(b) + 1 ones), and
  // each row's own KV cache bound as a row of past/present (graph::Tensor::rows, read and
  // written in place by GroupQueryAttention). The run takes place on gens[0]'s session (its own
  // bindings are restored after). Each generator ends as after append({pending()}): its token
  // cached, its own copy of its logits row. Generators that cannot take part (!batchable(), a
  // different capacity) and a batch of one step alone, one by one. Throws before any state
  // changes when a token does not fit.
  static void append_pending(std::span<Generator* const> gens);
  // The graph can run in a batched step: the KV cache is updated in place by GroupQueryAttention
  // nodes that take per-row cache pointers, and the graph comes from a genai config (graphs
  // rewritten from Optimum's plain ops assume batch 1).
  bool batchable() const { return batchable_; }
  static constexpr size_t kMaxBatch = 64;  // GroupQueryAttention's largest batch

  // Forgets everything (cache, pending token, stats).
  void reset();
  // Keeps only the first n cached tokens (drops the pending token).
  void truncate(int64_t n);

  int64_t length() const { return static_cast<int64_t>(tokens_.size()); }  // tokens in the cache
  int64_t capacity() const { return capacity_; }
  std::span<const int32_t> tokens() const { return tokens_; }
  // Sampled but not yet run (-1 if none).
  int32_t pending() const { return pending_; }
  // The last step left logits not yet sampled from (sample_next() can draw).
  bool has_logits() const { return has_logits_; }
  int64_t vocab_size() const { return vocab_; }
  // Bytes of the K and V cache allocated for capacity() positions (pages are
  // touched, and become resident, only as the cache fills).
  size_t kv_cache_bytes() const { return kv_cache_bytes_; }

  const GenaiConfig& config() const { return config_; }
  graph::Session& session() { return *session_; }
  const GenerationStats& stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }

 private:
  struct FreeDeleter {
    void operator()(void* p) const;
  };
  struct KvSlot {  // one past/present pair of names and its buffer(s)
    std::string past, present;
    void* buf[2] = {nullptr, nullptr};  // buf[1]: the other half of a ping-pong pair
  };
  void run_step(int64_t S, bool all_rows);
  void bind_own_cache();
  static void run_batch(std::span<Generator* const> gens);
  void take_logits_row(const graph::Tensor& logits, int64_t row);
  void check_and_stage(std::span<const int32_t> ids);
  void compact_cache(int64_t from_len, int64_t to_len);
  // Elements of one cache row: head_size, or head_size int8 codes + the 4-byte scale (--kv-cache q8).
  int64_t kv_row() const {
    return kv_dtype_ == graph::DType::kI8 ? config_.head_size + 4 : config_.head_size;
  }

  GenaiConfig config_;
  std::unique_ptr<graph::Session> session_;
  int64_t capacity_ = 0;
  int64_t prefill_chunk_ = kPrefillChunk;
  int64_t vocab_ = 0;
  size_t kv_cache_bytes_ = 0;
  std::vector<std::unique_ptr<void, FreeDeleter>> kv_mem_;
  std::vector<KvSlot> kv_;  // K0, V0, K1, V1, ...
  graph::DType kv_dtype_ = graph::DType::kF32;
  bool share_ = true;  // past and present are one buffer
  bool batchable_ = false;
  int cur_ = 0;  // ping-pong: which buffer holds the cache
  graph::DType logits_dtype_ = graph::DType::kF32;
  std::vector<float> logits_f32_;  // fp16 logits widened
  bool last_only_ = false;         // the session computes the last row's logits only
  // Inputs some exporters add (Optimum / transformers): logits_to_keep (or num_logits_to_keep),
  // an int64 scalar (0 = every position, k = the last k), fed 1 unless every row is wanted; and
  // merged decoders' use_cache_branch, a bool [1], fed "the cache holds something". "" = absent.
  std::string keep_name_, branch_name_;
  int64_t keep_ = 1;
  bool use_cache_ = false;
  std::span<const float> all_logits_;
  std::vector<int64_t> ids_buf_, mask_buf_, pos_buf_;
  std::vector<int64_t> batch_ids_, batch_mask_, batch_pos_;  // a batched step run on this session
  std::vector<void*> batch_rows_;                            // per KV slot, the rows' buffers
  std::vector<int32_t> tokens_;                              // what the cache holds
  std::vector<int32_t> one_;                                 // scratch for a single token
  int32_t pending_ = -1;
  bool has_logits_ = false;
  std::span<const float> last_logits_;
  GenerationStats stats_;
};

}  // namespace nbits::llm
