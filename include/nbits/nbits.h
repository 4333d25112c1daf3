// nbits public API: load an onnxruntime-genai model folder and generate.
//
//   auto model = nbits::Model::load("models/qwen2.5-0.5b-int4");
//   nbits::GenerationOptions go;
//   go.max_new_tokens = 64;
//   nbits::Generator gen(*model, go);
//   auto r = gen.generate("Once upon a time", [](std::string_view piece) { std::fputs(...); });
//   auto r2 = gen.generate(" And then");   // continues on the same KV cache
//
// Errors throw nbits::Error (a std::runtime_error) with one line naming the problem.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nbits {

struct ModelOptions {
  int threads = 0;                    // 0 = all hardware threads
  std::optional<int> accuracy_level;  // override every MatMulNBits (4 = int8 activations)
  int64_t context = 0;                // KV cache length; 0 = the config's max_length / context_length
  bool profile = false;
  // Store MatMulNBits scales as fp16 (~2^-11 relative per scale; ~10% fewer bytes
  // per token for int4 block 32). Default fp32: exact agreement with ONNX Runtime.
  bool fp16_scales = false;
};

// Unset fields take genai_config.json's "search" defaults.
struct GenerationOptions {
  int64_t max_new_tokens = 128;
  std::optional<float> temperature;  // 0 = greedy
  std::optional<int64_t> top_k;
  std::optional<float> top_p;
  float min_p = 0.0f;
  std::optional<float> repetition_penalty;
  uint64_t seed = 0;
  bool add_special = true;  // BOS etc. on the first text of a conversation
};

struct GenerationResult {
  std::vector<int32_t> prompt_ids;  // the tokens prefilled for this call
  std::vector<int32_t> ids;         // generated
  std::string text;                 // generated, decoded
  bool stopped_at_eos = false;
  double prefill_tok_s = 0, decode_ms_per_token = 0;
};

class Model {
 public:
  // DIR holds genai_config.json, the model file it names, and tokenizer.json.
  static std::unique_ptr<Model> load(const std::string& dir, const ModelOptions& options = {});
  ~Model();

  std::vector<int32_t> encode(std::string_view text, bool add_special) const;
  std::string decode(const std::vector<int32_t>& ids) const;
  int64_t context_length() const;  // KV capacity in tokens

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A conversation on a Model's KV cache (one Generator per Model at a time).
class Generator {
 public:
  explicit Generator(Model& model, const GenerationOptions& options = {});
  ~Generator();

  using OnText = std::function<void(std::string_view)>;
  // Prefills `text` (only the new tokens: the cache keeps what came before) and generates.
  GenerationResult generate(std::string_view text, const OnText& on_text = {});
  GenerationResult generate_ids(const std::vector<int32_t>& ids, const OnText& on_text = {});
  void reset();            // forget the conversation
  int64_t length() const;  // tokens in the cache

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace nbits
