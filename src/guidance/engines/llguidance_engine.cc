// The guidance room's engine: llguidance's C API (llguidance.h from the crate cargo fetched; the
// static library from rust/llguidance). One LlgTokenizer per model (Vocabulary), one LlgMatcher
// per reply (Matcher), its masks computed on a BackgroundTask.
#include <llguidance.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

#include "base/error.h"
#include "base/json_depth.h"
#include "guidance/background_task.h"
#include "guidance/guidance.h"

namespace nbits::guidance {
namespace {

// llguidance marks special tokens with a 0xFF byte before their text (toktrie's convention).
constexpr char kSpecialMarker = '\xff';

// Whether encode() of a piece of text gives tokens whose bytes are that text, as llguidance's
// tokenize callback must (no marker or space added before the piece).
bool encodes_bytes_as_they_are(const Tokenizer& tokenizer, const std::vector<std::string>& bytes) {
  for (const char* probe : {"{", "a b", "\n\"x\": 1}", "hello"}) {
    std::string joined;
    for (int32_t id : tokenizer.encode(probe, false))
      if (id >= 0 && static_cast<size_t>(id) < bytes.size()) joined += bytes[static_cast<size_t>(id)];
    if (joined != probe) return false;
  }
  return true;
}

class LlgVocabulary final : public Vocabulary {
 public:
  LlgVocabulary(const Tokenizer& tokenizer, int64_t vocab_size, std::span<const int32_t> eos,
                const Limits& limits)
      : tokenizer_(tokenizer), limits_(limits) {
    NBITS_CHECK(std::isfinite(limits.mask_ms) && limits.mask_ms >= 0 && limits.mask_ms <= 1e6,
                "constrained decoding: the mask budget must be 0 (the default) to 1e6 ms (got ",
                limits.mask_ms, ")");
    NBITS_CHECK(limits.grammar_size >= 0, "constrained decoding: the grammar size limit must be >= 0 (got ",
                limits.grammar_size, ")");
    NBITS_CHECK(!eos.empty(), "constrained decoding needs the model's end-of-sequence token ids");
    NBITS_CHECK(vocab_size >= tokenizer.vocab_size(), "constrained decoding: the model's ", vocab_size,
                " logits do not cover the tokenizer's ", tokenizer.vocab_size(), " tokens");
    const std::vector<std::string> bytes = tokenizer.token_bytes();
    std::vector<uint32_t> lens(static_cast<size_t>(vocab_size), 0);
    std::string all;
    for (size_t id = 0; id < bytes.size(); ++id) {
      if (bytes[id].empty()) continue;
      const bool special = tokenizer.is_special(static_cast<int32_t>(id));
      if (special) all.push_back(kSpecialMarker);
      all += bytes[id];
      lens[id] = static_cast<uint32_t>(bytes[id].size() + (special ? 1 : 0));
    }
    for (int32_t e : eos)
      NBITS_CHECK(e >= 0 && e < vocab_size, "end-of-sequence id ", e, " is outside the vocabulary");
    std::vector<uint32_t> extra(eos.begin() + 1, eos.end());
    LlgTokenizerInitV2 init{};
    init.struct_size = sizeof(init);
    init.vocab_size = static_cast<uint32_t>(vocab_size);
    init.tok_eos = static_cast<uint32_t>(eos[0]);
    init.token_lens = lens.data();
    init.token_bytes = reinterpret_cast<const uint8_t*>(all.data());
    if (encodes_bytes_as_they_are(tokenizer, bytes)) {
      // The tokenizer replaces invalid UTF-8 (as Hugging Face's does): llguidance tokenizes such
      // bytes greedily from the trie instead.
      init.tokenize_assumes_string = true;
      init.tokenize_fn = &LlgVocabulary::tokenize;
      init.tokenize_user_data = this;
    } else {
      // A SentencePiece normalizer puts a word marker before the text ("{" -> "▁{"): such an
      // encode() is no tokenizer of bytes in the middle of a text, so llguidance tokenizes
      // greedily from its trie.
      init.use_approximate_greedy_tokenize_fn = true;
    }
    init.tok_eos_extra = extra.empty() ? nullptr : extra.data();
    init.tok_eos_extra_count = static_cast<uint32_t>(extra.size());
    char err[1024] = {0};
    tok_ = llg_new_tokenizer_v2(&init, err, sizeof err);
    NBITS_CHECK(tok_ != nullptr, "constrained decoding: the vocabulary was refused: ", err);
  }
  ~LlgVocabulary() override { llg_free_tokenizer(tok_); }

  LlgConstraintInit init() const {
    LlgConstraintInit c{};
    llg_constraint_init_set_defaults(&c, tok_);
    c.log_stderr_level = 0;  // warnings go into the error text, not onto a server's stderr
    c.log_buffer_level = 0;
    c.limits.verbose_errors = false;  // errors name the problem, not the whole parser state
    if (limits_.mask_ms > 0) {        // llguidance's rated speeds: 14k lexer fuel and 20k Earley items a ms
      c.limits.step_lexer_fuel = std::max<uint64_t>(1, static_cast<uint64_t>(limits_.mask_ms * 14000.0));
      c.limits.step_max_items = std::max<size_t>(1, static_cast<size_t>(limits_.mask_ms * 20000.0));
    }
    if (limits_.grammar_size > 0) c.limits.max_grammar_size = static_cast<size_t>(limits_.grammar_size);
    return c;
  }

 private:
  // llguidance's tokenize callback: thread-safe (Tokenizer::encode is const).
  static size_t tokenize(const void* user, const uint8_t* bytes, size_t n, uint32_t* out, size_t cap) {
    const auto* self = static_cast<const LlgVocabulary*>(user);
    try {
      const std::vector<int32_t> ids =
          self->tokenizer_.encode(std::string_view(reinterpret_cast<const char*>(bytes), n), false);
      for (size_t i = 0; i < ids.size() && i < cap; ++i) out[i] = static_cast<uint32_t>(ids[i]);
      return ids.size();
    } catch (...) {
      return 0;  // never unwind into Rust
    }
  }

  const Tokenizer& tokenizer_;
  Limits limits_;
  LlgTokenizer* tok_ = nullptr;
};

// JSON between its tokens: llguidance's default allows any run of whitespace, and a weak model
// (or a story model asked for JSON) then writes newlines without end. As llama.cpp's schema
// grammars do: one space, or one or two newlines and up to 20 spaces or tabs of indentation. A
// schema's own "x-guidance" whitespace settings win.
constexpr const char* kJsonWhitespace = R"(( |\n{1,2}[ \t]{0,20}))";

std::string engine_data(const Spec& spec) {
  if (spec.kind != Kind::kJsonSchema && spec.kind != Kind::kJsonObject) return spec.data;
  if (json_nesting_depth(spec.data, kMaxOrderedJsonDepth) > kMaxOrderedJsonDepth)
    return spec.data;  // refused
  // ordered_json: the schema's properties keep their order (the order a reply writes them in).
  nlohmann::ordered_json schema = spec.kind == Kind::kJsonObject
                                      ? nlohmann::ordered_json{{"type", "object"}}
                                      : nlohmann::ordered_json::parse(spec.data, nullptr, false);
  if (!schema.is_object()) return spec.data;  // not an object (or not JSON): llguidance says why
  nlohmann::ordered_json& x = schema["x-guidance"];
  if (x.is_null()) x = nlohmann::ordered_json::object();
  if (x.is_object() && !x.contains("whitespace_pattern") && !x.contains("whitespace_flexible"))
    x["whitespace_pattern"] = kJsonWhitespace;
  return schema.dump();
}

// llguidance's message, without the "<non-verbose/>" marker it ends with when verbose errors are
// off, and with its one cryptic case explained.
std::string clean_message(std::string m) {
  for (const char* tail : {"<non-verbose/>", "\n"})
    while (m.size() >= std::strlen(tail) &&
           m.compare(m.size() - std::strlen(tail), std::string::npos, tail) == 0)
      m.erase(m.size() - std::strlen(tail));
  if (m.find("NoExtensionBias") != std::string::npos) m += " (nothing the spec allows can be generated here)";
  if (m.find("too many expressions constructed") != std::string::npos || m.find("fuel") != std::string::npos)
    m += " (past the mask's budget: Limits::mask_ms, --guidance-mask-ms)";
  return m;
}

// llguidance's name of a spec's kind (json_object goes as its schema, engine_data).
const char* engine_type(Kind k) { return k == Kind::kJsonObject ? "json_schema" : kind_name(k); }

class Matcher final : public llm::TokenConstraint {
 public:
  Matcher(std::shared_ptr<const LlgVocabulary> vocab, const Spec& spec) : vocab_(std::move(vocab)) {
    const LlgConstraintInit init = vocab_->init();
    const std::string data = engine_data(spec);
    m_ = llg_new_matcher(&init, engine_type(spec.kind), data.c_str());
    if (const char* e = llg_matcher_get_error(m_)) {
      const std::string msg = clean_message(e);
      llg_free_matcher(m_);
      fail("invalid ", kind_name(spec.kind), ": ", msg);
    }
    mask_.resize(llg_matcher_get_mask_byte_size(m_) / sizeof(uint32_t));
    start_mask();
  }
  ~Matcher() override {
    try {
      task_.wait();
    } catch (...) {
    }
    llg_free_matcher(m_);
  }

  std::span<const uint32_t> allowed() override {
    task_.wait();
    NBITS_CHECK(!ended_, "constrained decoding: the reply has ended (an end-of-sequence token was drawn)");
    NBITS_CHECK(error_.empty(), "constrained decoding failed: ", error_);
    return mask_;
  }

  void accept(int32_t token) override {
    task_.wait();
    // A complete reply (the grammar allows nothing more) was offered only the eos tokens.
    if (llg_matcher_is_stopped(m_) && !llg_matcher_is_error(m_)) {
      ended_ = true;
      return;
    }
    if (llg_matcher_consume_token(m_, static_cast<uint32_t>(token)) != 0) {
      const char* e = llg_matcher_get_error(m_);
      fail("constrained decoding: token ", token, " was refused: ", e ? clean_message(e) : "(no message)");
    }
    start_mask();
  }

  void rollback(int64_t n) override {
    task_.wait();
    if (n <= 0) return;
    if (ended_) {  // the eos token that ended the reply was never consumed
      ended_ = false;
      --n;
    }
    if (n > 0 && llg_matcher_rollback(m_, static_cast<size_t>(n)) != 0) {
      const char* e = llg_matcher_get_error(m_);
      fail("constrained decoding: rolling back ", n,
           " tokens failed: ", e ? clean_message(e) : "(no message)");
    }
    error_.clear();
    start_mask();
  }

  void forced(int64_t max_tokens, std::vector<int32_t>& out) override {
    task_.wait();
    out.clear();
    if (max_tokens <= 0 || ended_ || !error_.empty() || llg_matcher_is_stopped(m_)) return;
    ff_.resize(static_cast<size_t>(max_tokens));
    const int32_t n = llg_matcher_compute_ff_tokens(m_, ff_.data(), ff_.size());
    if (n <= 0) return;  // none, or an error the next allowed() reports
    out.assign(ff_.begin(), ff_.begin() + n);
  }

 private:
  // The next mask (the eos tokens alone once the grammar is complete), on the task's thread.
  void start_mask() {
    task_.start([this] {
      if (llg_matcher_compute_mask_into(m_, mask_.data(), mask_.size() * sizeof(uint32_t)) != 0) {
        const char* e = llg_matcher_get_error(m_);
        error_ = e ? clean_message(e) : "the mask could not be computed";
      }
    });
  }

  std::shared_ptr<const LlgVocabulary> vocab_;
  LlgMatcher* m_ = nullptr;
  std::vector<uint32_t> mask_;
  std::vector<uint32_t> ff_;  // forced(): the engine's output buffer
  std::string error_;
  bool ended_ = false;
  BackgroundTask task_;  // last: joined before the members it uses go
};

const LlgVocabulary& llg(const Vocabulary& v) {
  const auto* p = dynamic_cast<const LlgVocabulary*>(&v);
  NBITS_ASSERT(p != nullptr);
  return *p;
}

}  // namespace

bool available() { return true; }

std::string engine() {
  std::string v = llg_get_version();
  return v.empty() ? "llguidance" : v;
}

std::shared_ptr<const Vocabulary> make_vocabulary(const Tokenizer& tokenizer, int64_t vocab_size,
                                                  std::span<const int32_t> eos_ids, const Limits& limits) {
  return std::make_shared<LlgVocabulary>(tokenizer, vocab_size, eos_ids, limits);
}

std::shared_ptr<llm::TokenConstraint> make_constraint(std::shared_ptr<const Vocabulary> vocab,
                                                      const Spec& spec) {
  NBITS_CHECK(vocab != nullptr, "constrained decoding: no vocabulary");
  llg(*vocab);
  return std::make_shared<Matcher>(std::static_pointer_cast<const LlgVocabulary>(vocab), spec);
}

std::string check(const Vocabulary& vocab, const Spec& spec) {
  // A matcher and its first mask: some specs compile and fail only there (a $ref cycle that can
  // never produce a value), which a server must refuse before it answers 200.
  const LlgConstraintInit init = llg(vocab).init();
  const std::string data = engine_data(spec);
  LlgMatcher* m = llg_new_matcher(&init, engine_type(spec.kind), data.c_str());
  std::string err;
  if (const char* e = llg_matcher_get_error(m)) {
    err = e;
  } else {
    std::vector<uint32_t> mask(llg_matcher_get_mask_byte_size(m) / sizeof(uint32_t));
    if (llg_matcher_compute_mask_into(m, mask.data(), mask.size() * sizeof(uint32_t)) != 0) {
      const char* e2 = llg_matcher_get_error(m);
      err = e2 ? e2 : "the first token mask could not be computed";
    }
  }
  llg_free_matcher(m);
  return err.empty() ? "" : std::string("invalid ") + kind_name(spec.kind) + ": " + clean_message(err);
}

}  // namespace nbits::guidance
