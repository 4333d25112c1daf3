// genai_config.json: what onnxruntime-genai's builder writes next to model.onnx
// (token ids, context length, graph I/O names, KV geometry, search defaults).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nbits::llm {

// The "search" block: generation defaults.
struct SearchConfig {
  bool do_sample = false;
  double temperature = 1.0;
  int64_t top_k = 50;
  double top_p = 1.0;
  double repetition_penalty = 1.0;
  int64_t max_length = 0;  // 0 = not given (use context_length)
  int64_t min_length = 0;
  bool past_present_share_buffer = true;
};

struct GenaiConfig {
  std::string path;  // the file it was read from (for error messages)
  std::string dir;   // its directory
  // Hugging Face config.json (an Optimum export, llm/hf_config.h): the graph I/O names
  // are Optimum's, not a file's fields, and position_ids is fed only when the graph has it.
  bool from_hf_config = false;
  std::string model_type;
  std::optional<int64_t> bos_token_id;
  std::vector<int64_t> eos_token_ids;  // empty when the config gives none
  std::optional<int64_t> pad_token_id;
  int64_t context_length = 0;
  int64_t vocab_size = 0;  // 0 = not given

  // decoder
  std::string filename = "model.onnx";  // relative to dir
  int64_t head_size = 0;
  int64_t hidden_size = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t num_hidden_layers = 0;
  std::string input_ids_name = "input_ids";
  std::string attention_mask_name = "attention_mask";
  std::string position_ids_name;  // empty = the graph has no position_ids input
  std::string past_key_pattern = "past_key_values.%d.key";
  std::string past_value_pattern = "past_key_values.%d.value";
  std::string logits_name = "logits";
  std::string present_key_pattern = "present.%d.key";
  std::string present_value_pattern = "present.%d.value";

  SearchConfig search;

  bool is_eos(int64_t id) const;
  std::string model_path() const;  // dir + "/" + filename
  // KV capacity: min(context_length, search.max_length when given).
  int64_t default_max_length() const;
};

// Parses JSON text; `path` names the file in errors. Throws nbits::Error naming
// the field and the file for missing or ill-typed fields.
GenaiConfig parse_genai_config(const std::string& json_text, const std::string& path);

// Reads DIR/genai_config.json (or the file itself when given a file path).
GenaiConfig load_genai_config(const std::string& dir_or_file);

// "past_key_values.%d.key", 3 -> "past_key_values.3.key". Throws unless the
// pattern holds exactly one %d.
std::string format_layer_name(const std::string& pattern, int64_t layer);

}  // namespace nbits::llm
