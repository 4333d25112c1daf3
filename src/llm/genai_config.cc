#include "llm/genai_config.h"

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/mapped_file.h"
#include "llm/json_fields.h"

namespace nbits::llm {

namespace {

using json = nlohmann::json;

void check_pattern(const std::string& pattern, const std::string& field, const std::string& path) {
  size_t pos = pattern.find("%d");
  if (pos == std::string::npos || pattern.find('%', pos + 2) != std::string::npos || pattern.find('%') != pos)
    fail(path, ": field '", field, "' must contain exactly one %d (got \"", pattern, "\")");
}

}  // namespace

bool GenaiConfig::is_eos(int64_t id) const {
  for (int64_t e : eos_token_ids)
    if (e == id) return true;
  return false;
}

std::string GenaiConfig::model_path() const { return dir.empty() ? filename : dir + "/" + filename; }

int64_t GenaiConfig::default_max_length() const {
  if (search.max_length > 0 && search.max_length < context_length) return search.max_length;
  return context_length;
}

GenaiConfig parse_genai_config(const std::string& json_text, const std::string& path) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::parse_error& e) {
    fail(path, ": invalid JSON at byte ", e.byte);
  }
  if (!root.is_object()) fail(path, ": top level must be a JSON object");
  GenaiConfig c;
  c.path = path;
  const Fields top(root, "", path);
  const json& model = *top.object("model", true);
  const Fields m(model, "model", path);
  c.model_type = m.str_or("type", "");
  c.bos_token_id = m.opt_int("bos_token_id");
  // Optional: builders before 0.9 omit it when the Hugging Face config has none
  // (generation then stops only at the length limit).
  c.eos_token_ids = m.int_list("eos_token_id", false);
  auto pad = m.int_list("pad_token_id", false);
  if (!pad.empty()) c.pad_token_id = pad[0];
  c.context_length = m.req_int("context_length", 1);
  c.vocab_size = m.int_or("vocab_size", 0);

  const json& decoder = *m.object("decoder", true);
  const Fields d(decoder, "model.decoder", path);
  c.filename = d.str_or("filename", c.filename);
  if (c.filename.empty() || c.filename.find("..") != std::string::npos || c.filename[0] == '/')
    fail(path, ": field 'model.decoder.filename' must be a file name next to the config (got \"", c.filename,
         "\")");
  c.head_size = d.req_int("head_size", 1);
  c.hidden_size = d.int_or("hidden_size", 0);
  c.num_attention_heads = d.req_int("num_attention_heads", 1);
  c.num_hidden_layers = d.req_int("num_hidden_layers", 1);
  c.num_key_value_heads = d.int_or("num_key_value_heads", c.num_attention_heads);
  if (c.num_key_value_heads < 1)
    fail(path, ": field 'model.decoder.num_key_value_heads' must be >= 1 (got ", c.num_key_value_heads, ")");
  if (const json* in = d.object("inputs", false)) {
    const Fields f(*in, "model.decoder.inputs", path);
    c.input_ids_name = f.str_or("input_ids", c.input_ids_name);
    c.attention_mask_name = f.str_or("attention_mask", c.attention_mask_name);
    c.position_ids_name = f.str_or("position_ids", "");
    c.past_key_pattern = f.str_or("past_key_names", c.past_key_pattern);
    c.past_value_pattern = f.str_or("past_value_names", c.past_value_pattern);
  }
  if (const json* out = d.object("outputs", false)) {
    const Fields f(*out, "model.decoder.outputs", path);
    c.logits_name = f.str_or("logits", c.logits_name);
    c.present_key_pattern = f.str_or("present_key_names", c.present_key_pattern);
    c.present_value_pattern = f.str_or("present_value_names", c.present_value_pattern);
  }
  check_pattern(c.past_key_pattern, "model.decoder.inputs.past_key_names", path);
  check_pattern(c.past_value_pattern, "model.decoder.inputs.past_value_names", path);
  check_pattern(c.present_key_pattern, "model.decoder.outputs.present_key_names", path);
  check_pattern(c.present_value_pattern, "model.decoder.outputs.present_value_names", path);

  if (const json* search = top.object("search", false)) {
    const Fields s(*search, "search", path);
    SearchConfig& sc = c.search;
    sc.do_sample = s.bool_or("do_sample", sc.do_sample);
    sc.temperature = s.num_or("temperature", sc.temperature);
    sc.top_k = s.int_or("top_k", sc.top_k);
    sc.top_p = s.num_or("top_p", sc.top_p);
    sc.repetition_penalty = s.num_or("repetition_penalty", sc.repetition_penalty);
    sc.max_length = s.int_or("max_length", 0);
    sc.min_length = s.int_or("min_length", 0);
    sc.past_present_share_buffer = s.bool_or("past_present_share_buffer", sc.past_present_share_buffer);
    if (sc.temperature < 0) fail(path, ": field 'search.temperature' must be >= 0");
    if (sc.top_k < 0) fail(path, ": field 'search.top_k' must be >= 0");
    if (sc.top_p <= 0 || sc.top_p > 1) fail(path, ": field 'search.top_p' must be in (0, 1]");
    if (sc.repetition_penalty <= 0) fail(path, ": field 'search.repetition_penalty' must be > 0");
  }
  return c;
}

GenaiConfig load_genai_config(const std::string& dir_or_file) {
  std::string path = dir_or_file;
  std::string dir;
  const bool is_json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  if (!is_json) {
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    dir = path;
    path += "/genai_config.json";
  } else {
    size_t slash = path.rfind('/');
    dir = slash == std::string::npos ? "." : path.substr(0, slash);
  }
  if (!file_exists(path))
    fail("no genai_config.json in ", dir, " (is this an onnxruntime-genai model folder?)");
  GenaiConfig c = parse_genai_config(read_text_file(path), path);
  c.dir = dir;
  return c;
}

std::string format_layer_name(const std::string& pattern, int64_t layer) {
  size_t pos = pattern.find("%d");
  NBITS_CHECK(pos != std::string::npos, "name pattern '", pattern, "' has no %d");
  return pattern.substr(0, pos) + std::to_string(layer) + pattern.substr(pos + 2);
}

}  // namespace nbits::llm
