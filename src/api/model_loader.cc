#include "api/model_loader.h"

#include <sys/stat.h>

#include "base/error.h"
#include "base/mapped_file.h"
#include "gguf/model_builder.h"
#include "gguf/vocab.h"
#include "tokenizer/gguf_vocab.h"

namespace nbits::api {
namespace {

bool is_dir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

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
  gguf::GgufModel g = gguf::build_model(std::move(file));
  m.config = std::move(g.config);
  m.session = graph::Session::load(std::move(g.model), options);
  return m;
}

}  // namespace

LoadedModel load_model(const std::string& path, const graph::SessionOptions& options, bool need_tokenizer) {
  if (gguf::is_gguf_path(path)) return load_gguf(path, options, need_tokenizer);
  std::string dir = path;
  if (!is_dir(dir)) {
    NBITS_CHECK(file_exists(dir), "model folder '", dir, "' does not exist");
    const size_t slash = dir.rfind('/');
    dir = slash == std::string::npos ? "." : dir.substr(0, slash);
  }
  LoadedModel m;
  // The tokenizer first: it is quick and its errors should not wait for the weights.
  if (file_exists(dir + "/tokenizer.json")) {
    m.tokenizer = std::make_unique<Tokenizer>(Tokenizer::load(dir));
  } else {
    NBITS_CHECK(!need_tokenizer, "no tokenizer.json in ", dir, " (give the prompt as token ids)");
  }
  m.config = llm::load_genai_config(dir);
  m.session = graph::Session::load(m.config.model_path(), options);
  return m;
}

}  // namespace nbits::api
