// `nbits tokenize` and `nbits detokenize`: text <-> token ids with a model's tokenizer.json.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/mapped_file.h"
#include "cli/command.h"
#include "cli/common.h"
#include "gguf/model_builder.h"
#include "gguf/vocab.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/tokenizer.h"

namespace nbits::cli {
namespace {

// -m: a folder / tokenizer.json, or a GGUF file (its tokenizer.ggml.* metadata).
Tokenizer load_tokenizer(const std::string& path) {
  if (gguf::is_gguf_path(path)) return tokenizer_from_gguf(gguf::read_vocab(gguf::File::open(path)));
  return Tokenizer::load(path);
}

int tokenize_main(const std::vector<std::string>& args) {
  Flags f("tokenize", "-m DIR (--text TEXT | --file F) [--special] [--format text|json]",
          "Prints the token ids of a text (comma-separated, or JSON with ids and tokens).");
  f.str("-m,--model", "DIR", "folder with tokenizer.json (or the tokenizer.json file, or a .gguf)", true);
  f.str("-t,--text", "TEXT", "text to tokenize");
  f.str("-f,--file", "F", "file whose content to tokenize (UTF-8)");
  f.flag("--special", "add special tokens (post-processor, e.g. BOS for Llama)");
  f.choice("--format", {"text", "json"}, "output format", "text");
  if (auto rc = f.parse(args)) return *rc;
  if (f.has("--text") == f.has("--file")) return f.usage_error("give exactly one of --text or --file");
  std::string text = f.has("--text") ? f.get_str("--text") : read_text_file(f.get_str("--file"));
  Tokenizer tok = load_tokenizer(f.get_str("--model"));
  std::vector<int32_t> ids = tok.encode(text, f.get_flag("--special"));
  if (f.get_str("--format") == "json") {
    nlohmann::json j;
    j["ids"] = ids;
    nlohmann::json tokens = nlohmann::json::array();
    for (int32_t id : ids) tokens.push_back(tok.id_to_token(id));
    j["tokens"] = std::move(tokens);
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::string line;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i) line.push_back(',');
      line.append(std::to_string(ids[i]));
    }
    std::printf("%s\n", line.c_str());
  }
  return 0;
}

int detokenize_main(const std::vector<std::string>& args) {
  Flags f("detokenize", "-m DIR --ids 1,2,3 [--skip-special] [--format text|json]",
          "Prints the text of token ids.");
  f.str("-m,--model", "DIR", "folder with tokenizer.json (or the tokenizer.json file, or a .gguf)", true);
  f.ints("--ids", "1,2,3", "token ids, comma-separated");
  f.flag("--skip-special", "drop special tokens (e.g. <|im_end|>, </s>)");
  f.choice("--format", {"text", "json"}, "output format", "text");
  if (auto rc = f.parse(args)) return *rc;
  if (!f.has("--ids")) return f.usage_error("--ids is required");
  Tokenizer tok = load_tokenizer(f.get_str("--model"));
  std::vector<int32_t> ids;
  for (int64_t id : f.get_ints("--ids")) {
    NBITS_CHECK(id >= 0 && id < tok.vocab_size(), "token id ", id, " is out of range (vocabulary size ",
                tok.vocab_size(), ")");
    ids.push_back(static_cast<int32_t>(id));
  }
  std::string text = tok.decode(ids, f.get_flag("--skip-special"));
  if (f.get_str("--format") == "json")
    std::printf("%s\n", nlohmann::json({{"text", text}}).dump().c_str());
  else
    std::printf("%s\n", text.c_str());
  return 0;
}

}  // namespace

NBITS_COMMAND("tokenize", "print the token ids of a text", tokenize_main);
NBITS_COMMAND("detokenize", "print the text of token ids", detokenize_main);

}  // namespace nbits::cli
