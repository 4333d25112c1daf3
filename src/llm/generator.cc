#include "llm/generator.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "base/error.h"
#include "base/fp16.h"
#include "base/timer.h"
#include "llm/hf_config.h"

namespace nbits::llm {

using graph::DType;
using graph::Shape;
using graph::Tensor;

void Generator::FreeDeleter::operator()(void* p) const { std::free(p); }

namespace {

bool contains(const std::vector<std::string>& names, const std::string& n) {
  return std::find(names.begin(), names.end(), n) != names.end();
}

void require(const std::vector<std::string>& names, const std::string& n, const char* what,
             const GenaiConfig& c, const char* field) {
  if (c.from_hf_config)
    NBITS_CHECK(contains(names, n), c.model_path(), " has no ", what, " '", n,
                "' (the name Hugging Face Optimum exports use; is it a decoder with past_key_values?)");
  NBITS_CHECK(contains(names, n), c.model_path(), " has no ", what, " '", n, "' (named by ", c.path,
              " field '", field, "')");
}

}  // namespace

Generator::Generator(const GenaiConfig& config, std::unique_ptr<graph::Session> session, int64_t max_length)
    : config_(config), session_(std::move(session)) {
  NBITS_ASSERT(session_ != nullptr);
  capacity_ = max_length > 0 ? std::min(max_length, config_.context_length) : config_.default_max_length();
  vocab_ = config_.vocab_size;

  const auto inputs = session_->input_names();
  const auto outputs = session_->output_names();
  // Optimum exports of some families (and older exporters) have no position_ids input.
  if (config_.from_hf_config && !contains(inputs, config_.position_ids_name))
    config_.position_ids_name.clear();
  require(inputs, config_.input_ids_name, "input", config_, "model.decoder.inputs.input_ids");
  require(inputs, config_.attention_mask_name, "input", config_, "model.decoder.inputs.attention_mask");
  if (!config_.position_ids_name.empty())
    require(inputs, config_.position_ids_name, "input", config_, "model.decoder.inputs.position_ids");
  require(outputs, config_.logits_name, "output", config_, "model.decoder.outputs.logits");
  for (const char* n : {"logits_to_keep", "num_logits_to_keep"})
    if (contains(inputs, n)) keep_name_ = n;
  if (!keep_name_.empty())
    NBITS_CHECK(session_->input_dtype(keep_name_) == DType::kI64, config_.model_path(), ": input '",
                keep_name_, "' must be int64 (got ", dtype_name(session_->input_dtype(keep_name_)), ")");
  if (contains(inputs, "use_cache_branch")) {
    branch_name_ = "use_cache_branch";
    NBITS_CHECK(session_->input_dtype(branch_name_) == DType::kBool, config_.model_path(),
                ": input 'use_cache_branch' must be bool (got ",
                dtype_name(session_->input_dtype(branch_name_)), ")");
  }

  const int64_t L = config_.num_hidden_layers, Nkv = config_.num_key_value_heads;
  for (int64_t l = 0; l < L; ++l) {
    const std::string past_k = format_layer_name(config_.past_key_pattern, l);
    const std::string past_v = format_layer_name(config_.past_value_pattern, l);
    const std::string pres_k = format_layer_name(config_.present_key_pattern, l);
    const std::string pres_v = format_layer_name(config_.present_value_pattern, l);
    require(inputs, past_k, "input", config_, "model.decoder.inputs.past_key_names");
    require(inputs, past_v, "input", config_, "model.decoder.inputs.past_value_names");
    require(outputs, pres_k, "output", config_, "model.decoder.outputs.present_key_names");
    require(outputs, pres_v, "output", config_, "model.decoder.outputs.present_value_names");
    // One shared buffer when GroupQueryAttention (or ShortConv) writes the present (it updates
    // the cache in place, whatever genai_config's past_present_share_buffer says);
    // present = Concat(past, new) (MHA exports) needs two.
    if (l == 0) share_ = graph::updates_cache_in_place(session_->output_producer(pres_k));
    for (int which = 0; which < 2; ++which) {
      KvSlot slot;
      slot.past = which == 0 ? past_k : past_v;
      slot.present = which == 0 ? pres_k : pres_v;
      const DType dt = session_->input_dtype(slot.past);
      NBITS_CHECK(
          dt == DType::kF32 || dt == DType::kF16 || dt == DType::kBF16 || (dt == DType::kI8 && share_),
          config_.model_path(), ": '", slot.past, "' has dtype ", dtype_name(dt),
          "; the KV cache must be float, float16 or bfloat16 (int8: --kv-cache q8, GroupQueryAttention "
          "only)");
      NBITS_CHECK(session_->output_dtype(slot.present) == dt, config_.model_path(), ": '", slot.present,
                  "' and '", slot.past, "' have different dtypes");
      NBITS_CHECK(kv_.empty() || dt == kv_dtype_, config_.model_path(), ": '", slot.past, "' has dtype ",
                  dtype_name(dt), " and '", kv_.front().past, "' ", dtype_name(kv_dtype_),
                  "; the KV cache must have one dtype");
      kv_dtype_ = dt;
      for (int i = 0; i < (share_ ? 1 : 2); ++i) {
        // calloc: pages stay untouched (and cost no memory) until the cache reaches them. 64 bytes
        // more, and the cache starts at the next 64-byte boundary: glibc's large callocs are 16 bytes
        // past a page, and the attention kernels' 64-byte row loads would each straddle two cache
        // lines (the decode kernel ran 1.5x slower on such rows).
        const size_t bytes = static_cast<size_t>(Nkv * capacity_ * kv_row()) * graph::dtype_size(dt);
        void* p = std::calloc(bytes + 64, 1);
        if (p == nullptr) throw std::bad_alloc();
        kv_mem_.emplace_back(p);
        kv_cache_bytes_ += bytes;
        slot.buf[i] = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(p) + 63) / 64 * 64);
      }
      kv_.push_back(std::move(slot));
    }
  }
  bind_own_cache();
  batchable_ = share_ && !config_.from_hf_config;
  for (const KvSlot& slot : kv_)
    batchable_ =
        batchable_ && session_->takes_row_pointers(slot.past) && session_->takes_row_pointers(slot.present);
  logits_dtype_ = session_->output_dtype(config_.logits_name);
  NBITS_CHECK(logits_dtype_ == DType::kF32 || logits_dtype_ == DType::kF16 || logits_dtype_ == DType::kBF16,
              config_.model_path(), ": output '", config_.logits_name,
              "' must be float, float16 or bfloat16 (got ", dtype_name(logits_dtype_), ")");
  NBITS_CHECK(!contains(inputs, format_layer_name(config_.past_key_pattern, L)), config_.model_path(),
              " has more layers than ", config_.path, " says (model.decoder.num_hidden_layers = ", L, ")");
  try {
    session_->set_last_position_only(config_.logits_name, true);
    last_only_ = true;
  } catch (const Error&) {
    // Not supported by this graph: logits come for every position; we read the last row.
  }
  ids_buf_.resize(static_cast<size_t>(capacity_));
  mask_buf_.assign(static_cast<size_t>(capacity_), 1);
  pos_buf_.resize(static_cast<size_t>(capacity_));
  for (int64_t i = 0; i < capacity_; ++i) pos_buf_[static_cast<size_t>(i)] = i;
  tokens_.reserve(static_cast<size_t>(capacity_));
  one_.reserve(static_cast<size_t>(capacity_) + 1);
}

std::unique_ptr<Generator> Generator::load(const std::string& dir, const graph::SessionOptions& options,
                                           int64_t max_length) {
  GenaiConfig config = load_model_config(dir);
  graph::SessionOptions o = options;
  if (o.max_positions == 0) o.max_positions = config.context_length;  // the fused rotary tables
  auto session = graph::Session::load(config.model_path(), o);
  return std::make_unique<Generator>(config, std::move(session), max_length);
}

void Generator::bind_own_cache() {
  if (!share_) return;
  for (const KvSlot& slot : kv_) {
    const Tensor t{kv_dtype_, Shape{1, config_.num_key_value_heads, capacity_, kv_row()}, slot.buf[0]};
    session_->bind_input(slot.past, t);
    session_->bind_output(slot.present, t);
  }
}

void Generator::run_step(int64_t S, bool all_rows) {
  const int64_t past = length();
  const int64_t T = past + S;
  session_->bind_input(config_.input_ids_name, Tensor{DType::kI64, Shape{1, S}, ids_buf_.data()});
  session_->bind_input(config_.attention_mask_name, Tensor{DType::kI64, Shape{1, T}, mask_buf_.data()});
  if (!config_.position_ids_name.empty())
    session_->bind_input(config_.position_ids_name, Tensor{DType::kI64, Shape{1, S}, pos_buf_.data() + past});
  if (!keep_name_.empty()) {
    keep_ = all_rows ? 0 : 1;
    session_->bind_input(keep_name_, Tensor{DType::kI64, Shape{}, &keep_});
  }
  if (!branch_name_.empty()) {
    use_cache_ = past > 0;
    session_->bind_input(branch_name_, Tensor{DType::kBool, Shape{1}, &use_cache_});
  }
  if (!share_) {
    const int64_t Nkv = config_.num_key_value_heads, H = kv_row();
    for (const KvSlot& slot : kv_) {
      session_->bind_input(slot.past, Tensor{kv_dtype_, Shape{1, Nkv, past, H}, slot.buf[cur_]});
      session_->bind_output(slot.present, Tensor{kv_dtype_, Shape{1, Nkv, T, H}, slot.buf[1 - cur_]});
    }
  }
  const bool toggle = all_rows && last_only_;
  if (toggle) session_->set_last_position_only(config_.logits_name, false);
  try {
    session_->run();
  } catch (...) {
    if (toggle) session_->set_last_position_only(config_.logits_name, true);
    throw;
  }
  if (toggle) session_->set_last_position_only(config_.logits_name, true);
  if (!share_) cur_ = 1 - cur_;
  const Tensor& logits = session_->output(config_.logits_name);
  NBITS_CHECK(logits.shape.rank >= 2, config_.model_path(), ": output '", config_.logits_name,
              "' must be [batch, seq, vocab] (got ", logits.shape.str(), ")");
  const int64_t V = logits.shape[logits.shape.rank - 1];
  NBITS_CHECK(V > 0 && logits.numel() >= V, config_.model_path(), ": empty logits ", logits.shape.str());
  vocab_ = V;
  const int64_t rows = all_rows ? S : 1;
  if (all_rows)
    NBITS_CHECK(logits.numel() == S * V, config_.model_path(), ": logits ", logits.shape.str(),
                " do not hold one row per position of a ", S, "-token step");
  const int64_t first = logits.numel() - rows * V;  // offset of the first row returned
  if (logits_dtype_ == DType::kF32) {
    all_logits_ = {logits.as<const float>() + first, static_cast<size_t>(rows * V)};
  } else {
    logits_f32_.resize(static_cast<size_t>(rows * V));
    const auto* h = logits.as<const uint16_t>() + first;
    for (int64_t i = 0; i < rows * V; ++i)
      logits_f32_[static_cast<size_t>(i)] =
          logits_dtype_ == DType::kF16 ? fp16_to_float(h[i]) : bf16_to_float(h[i]);
    all_logits_ = logits_f32_;
  }
  last_logits_ = all_logits_.subspan(static_cast<size_t>((rows - 1) * V));
  has_logits_ = true;
}

// Ping-pong caches are dense [Nkv, T, H]: keeping the first to_len positions
// moves each head's rows down (ascending, so memmove never overwrites unread rows).
void Generator::compact_cache(int64_t from_len, int64_t to_len) {
  if (share_ || from_len == to_len) return;
  const int64_t Nkv = config_.num_key_value_heads;
  const size_t row = static_cast<size_t>(kv_row()) * graph::dtype_size(kv_dtype_);
  for (const KvSlot& slot : kv_) {
    auto* base = static_cast<uint8_t*>(slot.buf[cur_]);
    for (int64_t h = 1; h < Nkv; ++h)
      std::memmove(base + static_cast<size_t>(h * to_len) * row,
                   base + static_cast<size_t>(h * from_len) * row, static_cast<size_t>(to_len) * row);
  }
}

void Generator::check_and_stage(std::span<const int32_t> ids) {
  const auto S = static_cast<int64_t>(ids.size());
  NBITS_CHECK(S > 0, "nothing to run: no tokens given");
  if (length() == 0) {
    NBITS_CHECK(S <= capacity_, "prompt of ", S, " tokens does not fit the context of ", capacity_);
  } else {
    NBITS_CHECK(length() + S <= capacity_, S, " new tokens do not fit the context of ", capacity_, " (",
                length(), " already used)");
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    NBITS_CHECK(ids[i] >= 0 && (vocab_ <= 0 || ids[i] < vocab_), "token id ", ids[i],
                " is out of range for the vocabulary of ", vocab_);
    ids_buf_[i] = ids[i];
  }
  pending_ = -1;
  has_logits_ = false;
}

std::span<const float> Generator::append(std::span<const int32_t> ids) {
  check_and_stage(ids);
  const auto S = static_cast<int64_t>(ids.size());
  // Steps of near-equal length (513 tokens: 257 + 256, never 512 + a 1-token decode step).
  const int64_t steps = prefill_chunk_ > 0 ? (S + prefill_chunk_ - 1) / prefill_chunk_ : 1;
  for (int64_t k = 0, c0 = 0; k < steps; ++k) {
    const int64_t n = S * (k + 1) / steps - c0;
    // This step's ids to the front (c0 >= n: the ranges do not overlap).
    if (c0 > 0) std::copy(ids_buf_.begin() + c0, ids_buf_.begin() + c0 + n, ids_buf_.begin());
    run_step(n, /*all_rows=*/false);
    tokens_.insert(tokens_.end(), ids.begin() + c0, ids.begin() + c0 + n);
    c0 += n;
  }
  return last_logits_;
}

void Generator::set_prefill_chunk(int64_t tokens) {
  NBITS_CHECK(tokens >= 0, "prefill chunk must be >= 1 token, or 0 for one step (got ", tokens, ")");
  prefill_chunk_ = tokens;
}

std::span<const float> Generator::append_all_logits(std::span<const int32_t> ids) {
  check_and_stage(ids);
  run_step(static_cast<int64_t>(ids.size()), /*all_rows=*/true);
  tokens_.insert(tokens_.end(), ids.begin(), ids.end());
  return all_logits_;
}

std::span<const float> Generator::verify(std::span<const int32_t> ids) {
  struct AsDecode {  // positions attended as decode steps for this run only, even if it throws
    graph::Session& s;
    explicit AsDecode(graph::Session& session) : s(session) { s.set_positions_as_decode(true); }
    ~AsDecode() { s.set_positions_as_decode(false); }
  } as_decode(*session_);
  return append_all_logits(ids);
}

void Generator::keep(int64_t n, int32_t next) {
  NBITS_CHECK(next >= 0 && (vocab_ <= 0 || next < vocab_), "token id ", next,
              " is out of range for the vocabulary of ", vocab_);
  truncate(n);
  pending_ = next;
}

GenerateResult Generator::generate(std::span<const int32_t> new_ids, int64_t max_new_tokens, Sampler& sampler,
                                   const std::function<bool(int32_t)>& on_token) {
  GenerateResult result;
  result.ids.reserve(static_cast<size_t>(std::max<int64_t>(max_new_tokens, 0)));
  one_.clear();
  if (pending_ >= 0) one_.push_back(pending_);
  one_.insert(one_.end(), new_ids.begin(), new_ids.end());
  if (!one_.empty()) {
    Stopwatch sw;
    append(one_);
    stats_.prefill_tokens += static_cast<int64_t>(one_.size());
    stats_.prefill_ms += sw.elapsed_ms();
  }
  NBITS_CHECK(has_logits_, "nothing to generate from: the prompt is empty");
  if (max_new_tokens <= 0) return result;
  Stopwatch sw;
  for (int64_t i = 0;; ++i) {
    const int32_t tok = sample_next(sampler);
    result.ids.push_back(tok);
    const bool go_on = !on_token || on_token(tok);
    if (config_.is_eos(tok)) {
      result.stop = StopReason::kEos;
      break;
    }
    if (!go_on) {
      result.stop = StopReason::kCallback;
      break;
    }
    if (i + 1 >= max_new_tokens) {
      result.stop = StopReason::kMaxTokens;
      break;
    }
    if (length() >= capacity_) {
      result.stop = StopReason::kContextFull;
      break;
    }
    sw.restart();
    one_.assign(1, tok);
    append(one_);
    stats_.decode_tokens += 1;
    stats_.decode_ms += sw.elapsed_ms();
  }
  return result;
}

int32_t Generator::sample_next(Sampler& sampler) {
  NBITS_CHECK(has_logits_, "nothing to sample from: no step left logits");
  const int32_t tok = sampler.sample(last_logits_, tokens_);
  pending_ = tok;
  has_logits_ = false;
  return tok;
}

void Generator::append_pending(std::span<Generator* const> gens) {
  for (size_t i = 0; i < gens.size(); ++i) {
    NBITS_CHECK(gens[i] != nullptr && gens[i]->pending_ >= 0, "append_pending: generator ", i,
                " has no pending token");
    NBITS_CHECK(gens[i]->length() + 1 <= gens[i]->capacity_, "append_pending: generator ", i,
                ": 1 new token does not fit the context of ", gens[i]->capacity_);
    for (size_t j = 0; j < i; ++j)
      NBITS_CHECK(gens[j] != gens[i], "append_pending: generator ", i, " is also generator ", j);
  }
  // Rows that can share a run: batchable, the first one's capacity and vocabulary.
  std::vector<Generator*> batch, alone;
  for (Generator* g : gens) {
    const Generator* first = batch.empty() ? g : batch[0];
    if (g->batchable_ && g->capacity_ == first->capacity_ && g->vocab_ == first->vocab_ &&
        g->config_.model_path() == first->config_.model_path() && batch.size() < kMaxBatch)
      batch.push_back(g);
    else
      alone.push_back(g);
  }
  if (batch.size() == 1) {
    alone.insert(alone.begin(), batch[0]);
    batch.clear();
  }
  if (!batch.empty()) run_batch(batch);
  for (Generator* g : alone) {
    g->one_.assign(1, g->pending_);
    g->append(g->one_);
  }
}

void Generator::run_batch(std::span<Generator* const> gens) {
  Stopwatch sw;
  Generator& lead = *gens[0];
  graph::Session& s = *lead.session_;
  const auto B = static_cast<int64_t>(gens.size());
  int64_t T = 0;
  for (const Generator* g : gens) T = std::max(T, g->length() + 1);
  lead.batch_ids_.resize(static_cast<size_t>(B));
  lead.batch_pos_.resize(static_cast<size_t>(B));
  lead.batch_mask_.assign(static_cast<size_t>(B * T), 0);
  for (int64_t b = 0; b < B; ++b) {
    const Generator& g = *gens[static_cast<size_t>(b)];
    NBITS_CHECK(g.vocab_ <= 0 || g.pending_ < g.vocab_, "token id ", g.pending_,
                " is out of range for the vocabulary of ", g.vocab_);
    lead.batch_ids_[static_cast<size_t>(b)] = g.pending_;
    lead.batch_pos_[static_cast<size_t>(b)] = g.length();
    std::fill_n(lead.batch_mask_.begin() + b * T, g.length() + 1, int64_t{1});
  }
  const GenaiConfig& c = lead.config_;
  s.bind_input(c.input_ids_name, Tensor{DType::kI64, Shape{B, 1}, lead.batch_ids_.data()});
  s.bind_input(c.attention_mask_name, Tensor{DType::kI64, Shape{B, T}, lead.batch_mask_.data()});
  if (!c.position_ids_name.empty())
    s.bind_input(c.position_ids_name, Tensor{DType::kI64, Shape{B, 1}, lead.batch_pos_.data()});
  if (!lead.keep_name_.empty()) {
    lead.keep_ = 1;
    s.bind_input(lead.keep_name_, Tensor{DType::kI64, Shape{}, &lead.keep_});
  }
  if (!lead.branch_name_.empty()) {
    lead.use_cache_ = true;
    s.bind_input(lead.branch_name_, Tensor{DType::kBool, Shape{1}, &lead.use_cache_});
  }
  const size_t slots = lead.kv_.size();
  lead.batch_rows_.resize(slots * static_cast<size_t>(B));
  try {
    for (size_t j = 0; j < slots; ++j) {
      void** rows = lead.batch_rows_.data() + j * static_cast<size_t>(B);
      for (int64_t b = 0; b < B; ++b) rows[b] = gens[static_cast<size_t>(b)]->kv_[j].buf[0];
      Tensor t{lead.kv_dtype_, Shape{B, c.num_key_value_heads, lead.capacity_, lead.kv_row()}, rows[0]};
      t.rows = rows;
      s.bind_input(lead.kv_[j].past, t);
      s.bind_output(lead.kv_[j].present, t);
    }
    s.run();
  } catch (...) {
    lead.bind_own_cache();
    throw;
  }
  lead.bind_own_cache();
  const Tensor& logits = s.output(c.logits_name);
  const int64_t V = logits.shape.rank >= 2 ? logits.shape[logits.shape.rank - 1] : 0;
  NBITS_CHECK(V > 0 && logits.numel() == B * V, c.model_path(), ": logits ", logits.shape.str(),
              " do not hold one row per sequence of a batch of ", B);
  const double ms = sw.elapsed_ms();
  for (int64_t b = 0; b < B; ++b) {
    Generator& g = *gens[static_cast<size_t>(b)];
    g.take_logits_row(logits, b);
    g.tokens_.push_back(g.pending_);
    g.pending_ = -1;
    g.stats_.prefill_tokens += 1;  // as generate() counts a pending token it runs
    g.stats_.prefill_ms += ms;
    g.stats_.batch_rows += 1;
  }
}

// Row `row` of a [B, 1, V] logits output becomes this generator's own last logits.
void Generator::take_logits_row(const graph::Tensor& logits, int64_t row) {
  const int64_t V = logits.shape[logits.shape.rank - 1];
  vocab_ = V;
  logits_f32_.resize(static_cast<size_t>(V));
  if (logits_dtype_ == DType::kF32) {
    std::memcpy(logits_f32_.data(), logits.as<const float>() + row * V,
                static_cast<size_t>(V) * sizeof(float));
  } else {
    const auto* h = logits.as<const uint16_t>() + row * V;
    for (int64_t i = 0; i < V; ++i)
      logits_f32_[static_cast<size_t>(i)] =
          logits_dtype_ == DType::kF16 ? fp16_to_float(h[i]) : bf16_to_float(h[i]);
  }
  all_logits_ = logits_f32_;
  last_logits_ = all_logits_;
  has_logits_ = true;
}

void Generator::reset() {
  tokens_.clear();
  cur_ = 0;
  pending_ = -1;
  has_logits_ = false;
  stats_ = {};
}

void Generator::truncate(int64_t n) {
  NBITS_CHECK(n >= 0 && n <= length(), "cannot truncate the cache of ", length(), " tokens to ", n);
  compact_cache(length(), n);
  tokens_.resize(static_cast<size_t>(n));
  pending_ = -1;
  has_logits_ = false;
}

}  // namespace nbits::llm
