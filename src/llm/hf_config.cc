#include "llm/hf_config.h"

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/mapped_file.h"
#include "llm/json_fields.h"

namespace nbits::llm {
namespace {

using json = nlohmann::json;

bool is_dir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string parent_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string strip_slashes(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

bool ends_with(const std::string& s, const char* suffix) {
  const std::string t(suffix);
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

json parse_json(const std::string& text, const std::string& path) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    fail(path, ": invalid JSON at byte ", e.byte);
  }
  if (!root.is_object()) fail(path, ": top level must be a JSON object");
  return root;
}

}  // namespace

const std::vector<OptimumVariant>& optimum_variants() {
  static const std::vector<OptimumVariant> kVariants = {
      {"q4", "model_q4.onnx"},       {"q4f16", "model_q4f16.onnx"},         {"int8", "model_int8.onnx"},
      {"uint8", "model_uint8.onnx"}, {"quantized", "model_quantized.onnx"}, {"fp16", "model_fp16.onnx"},
      {"fp32", "model.onnx"},        {"bnb4", "model_bnb4.onnx"},
  };
  return kVariants;
}

bool is_optimum_folder(const std::string& dir) {
  return file_exists(dir + "/config.json") && !file_exists(dir + "/genai_config.json");
}

std::string find_optimum_decoder(const std::string& dir, const std::string& variant) {
  // onnx-community keeps the decoders in onnx/; a plain `optimum-cli export onnx` puts model.onnx
  // next to config.json.
  const char* subdirs[] = {"onnx/", ""};
  std::string present;
  for (const OptimumVariant& v : optimum_variants()) {
    if (!variant.empty() && variant != v.name) continue;
    for (const char* sub : subdirs) {
      const std::string rel = std::string(sub) + v.file;
      if (file_exists(dir + "/" + rel)) return rel;
    }
  }
  for (const OptimumVariant& v : optimum_variants())
    for (const char* sub : subdirs)
      if (file_exists(dir + "/" + sub + v.file)) {
        present += present.empty() ? "" : ", ";
        present += v.name;
        break;
      }
  if (!variant.empty()) {
    bool known = false;
    std::string names;
    for (const OptimumVariant& v : optimum_variants()) {
      known = known || variant == v.name;
      names += names.empty() ? "" : "|";
      names += v.name;
    }
    NBITS_CHECK(known, "unknown variant '", variant, "' (expected ", names, ")");
    fail(dir, " has no ", variant, " decoder (onnx/model", variant == "fp32" ? "" : "_" + variant,
         ".onnx); variants present: ", present.empty() ? "none" : present);
  }
  fail(dir,
       " has config.json but no decoder: expected onnx/model.onnx or onnx/model_q4.onnx (or another "
       "variant: model_fp16, model_q4f16, model_int8, model_quantized)");
}

GenaiConfig parse_hf_config(const std::string& config_json, const std::string& generation_json,
                            const std::string& config_path) {
  const json root = parse_json(config_json, config_path);
  GenaiConfig c;
  c.path = config_path;
  c.from_hf_config = true;
  const Fields top(root, "", config_path);
  c.model_type = top.str_or("model_type", "");
  // Multimodal configs (gemma3, ...) keep the decoder's sizes in text_config.
  const json* text = top.object("text_config", false);
  const json& tc = text != nullptr && !root.contains("num_hidden_layers") ? *text : root;
  const Fields d(tc, &tc == &root ? "" : "text_config", config_path);
  if (&tc != &root) c.model_type = d.str_or("model_type", c.model_type);
  c.hidden_size = d.req_int("hidden_size", 1);
  c.num_attention_heads = d.req_int("num_attention_heads", 1);
  c.num_hidden_layers = d.req_int("num_hidden_layers", 1);
  c.num_key_value_heads = d.int_or("num_key_value_heads", c.num_attention_heads);
  if (c.num_key_value_heads < 1)
    fail(config_path, ": field '", d.name("num_key_value_heads"), "' must be >= 1 (got ",
         c.num_key_value_heads, ")");
  c.head_size = d.int_or("head_dim", 0);
  if (c.head_size <= 0) {
    if (c.hidden_size % c.num_attention_heads != 0)
      fail(config_path, ": no head_dim, and hidden_size ", c.hidden_size,
           " is not a multiple of num_attention_heads ", c.num_attention_heads);
    c.head_size = c.hidden_size / c.num_attention_heads;
  }
  c.vocab_size = d.int_or("vocab_size", 0);
  c.context_length = d.int_or("max_position_embeddings", 0);
  if (c.context_length <= 0) c.context_length = top.int_or("max_position_embeddings", 0);
  if (c.context_length <= 0)
    fail(config_path, ": missing 'max_position_embeddings' (the context length; pass --ctx to override it)");
  c.bos_token_id = top.opt_int("bos_token_id");
  c.eos_token_ids = top.int_list("eos_token_id", false);
  auto pad = top.int_list("pad_token_id", false);
  if (!pad.empty()) c.pad_token_id = pad[0];

  // Optimum's I/O names (GenaiConfig's defaults), position_ids when the graph has it.
  c.position_ids_name = "position_ids";

  // generation_config.json: the eos list and sampling defaults, as transformers reads them.
  if (!generation_json.empty()) {
    const std::string gpath = parent_of(config_path) + "/generation_config.json";
    const json gen = parse_json(generation_json, gpath);
    const Fields g(gen, "", gpath);
    auto eos = g.int_list("eos_token_id", false);
    if (!eos.empty()) c.eos_token_ids = eos;
    if (auto bos = g.opt_int("bos_token_id")) c.bos_token_id = bos;
    auto gpad = g.int_list("pad_token_id", false);
    if (!gpad.empty()) c.pad_token_id = gpad[0];
    SearchConfig& sc = c.search;
    sc.do_sample = g.bool_or("do_sample", sc.do_sample);
    sc.temperature = g.num_or("temperature", sc.temperature);
    sc.top_k = g.int_or("top_k", sc.top_k);
    sc.top_p = g.num_or("top_p", sc.top_p);
    sc.repetition_penalty = g.num_or("repetition_penalty", sc.repetition_penalty);
    if (sc.temperature < 0) fail(gpath, ": field 'temperature' must be >= 0");
    if (sc.top_k < 0) fail(gpath, ": field 'top_k' must be >= 0");
    if (sc.top_p <= 0 || sc.top_p > 1) fail(gpath, ": field 'top_p' must be in (0, 1]");
    if (sc.repetition_penalty <= 0) fail(gpath, ": field 'repetition_penalty' must be > 0");
    // max_length in generation_config.json is a default for a generate() call (often 20), not the
    // context: the context stays max_position_embeddings, as onnxruntime-genai's builder sets it.
  }
  return c;
}

GenaiConfig load_hf_config(const std::string& dir, const std::string& decoder_file) {
  const std::string cpath = dir + "/config.json";
  const std::string gpath = dir + "/generation_config.json";
  GenaiConfig c =
      parse_hf_config(read_text_file(cpath), file_exists(gpath) ? read_text_file(gpath) : "", cpath);
  c.dir = dir;
  c.filename = decoder_file;
  return c;
}

GenaiConfig load_model_config(const std::string& path_in, const std::string& variant) {
  const std::string path = strip_slashes(path_in);
  if (is_dir(path)) {
    if (file_exists(path + "/genai_config.json")) {
      NBITS_CHECK(variant.empty(), "--variant chooses among an Optimum export's onnx/model_*.onnx files; ",
                  path, " is an onnxruntime-genai folder (its genai_config.json names one decoder)");
      return load_genai_config(path);
    }
    if (file_exists(path + "/config.json")) return load_hf_config(path, find_optimum_decoder(path, variant));
    fail("no genai_config.json (onnxruntime-genai) or config.json (Hugging Face Optimum) in ", path,
         ": not a model folder");
  }
  NBITS_CHECK(file_exists(path), "model '", path, "' does not exist");
  if (ends_with(path, ".json")) return load_genai_config(path);
  if (ends_with(path, ".onnx")) {
    NBITS_CHECK(variant.empty(), "give either a decoder file or --variant, not both");
    const std::string dir = parent_of(path);
    const std::string file = path.substr(path.rfind('/') + 1);
    if (file_exists(dir + "/genai_config.json")) {
      GenaiConfig c = load_genai_config(dir);
      NBITS_CHECK(c.filename == file, path, ": ", c.path, " names '", c.filename,
                  "' as the decoder; pass the folder, or that file");
      return c;
    }
    if (file_exists(dir + "/config.json")) return load_hf_config(dir, file);
    const std::string up = parent_of(dir);
    if (file_exists(up + "/config.json") && !file_exists(up + "/genai_config.json"))
      return load_hf_config(up, dir.substr(dir.rfind('/') + 1) + "/" + file);
    fail("no genai_config.json or config.json next to ", path,
         " (or in its parent folder): nbits needs the "
         "model's config to know its layers, heads and tokens");
  }
  fail("'", path, "' is not a model folder, an .onnx file or a .gguf file");
}

}  // namespace nbits::llm
