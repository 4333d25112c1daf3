#include "api/model_loader.h"

#include <algorithm>

#include "base/error.h"
#include "base/mapped_file.h"
#include "gguf/model_builder.h"
#include "gguf/vocab.h"
#include "llm/hf_config.h"
#include "tokenizer/gguf_vocab.h"

namespace nbits::api {
namespace {

// A GGUF file: the model synthesised in memory (gguf/model_builder.h), the tokenizer
// from its tokenizer.ggml.* metadata.
LoadedModel load_gguf(const std::string& path, const graph::SessionOptions& options, bool need_tokenizer) {
  LoadedModel m;
  gguf::File file = gguf::File::open(path);
  try {
    m.tokenizer = std::make_unique<Tokenizer>(tokenizer_from_gguf(gguf::read_vocab(file)));
  } catch (const Error&) {
    if (need_tokenizer) throw;
  }
  // max_positions: the KV capacity the caller will run with (0 = the file's context). It sizes the
  // rope tables and makes LongRoPE's long/short choice (phi3), as llama.cpp's context size does, so
  // it also bounds every Generator's context.
  const int64_t capacity = options.max_positions;
  gguf::GgufModel g = gguf::build_model(std::move(file), 4, capacity);
  m.config = std::move(g.config);
  if (capacity > 0) m.config.context_length = std::min(m.config.context_length, capacity);
  m.session = graph::Session::load(std::move(g.model), options);
  return m;
}

}  // namespace

LoadedModel load_model(const std::string& path, const graph::SessionOptions& options, bool need_tokenizer,
                       const std::string& variant) {
  if (gguf::is_gguf_path(path)) {
    NBITS_CHECK(variant.empty(),
                "--variant chooses among an Optimum export's onnx/model_*.onnx files, not a GGUF");
    return load_gguf(path, options, need_tokenizer);
  }
  LoadedModel m;
  m.config = llm::load_model_config(path, variant);
  // The tokenizer before the weights: it is quick and its errors should not wait for them.
  const std::string& dir = m.config.dir;
  if (file_exists(dir + "/tokenizer.json")) {
    m.tokenizer = std::make_unique<Tokenizer>(Tokenizer::load(dir));
  } else {
    NBITS_CHECK(!need_tokenizer, "no tokenizer.json in ", dir, " (give the prompt as token ids)");
  }
  graph::SessionOptions o = options;
  if (o.max_positions == 0) o.max_positions = m.config.context_length;  // the fused rotary tables
  m.session = graph::Session::load(m.config.model_path(), o);
  return m;
}

}  // namespace nbits::api
