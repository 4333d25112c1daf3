// `nbits run`: generate text from an onnxruntime-genai model folder.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/mapped_file.h"
#include "cli/command.h"
#include "cli/common.h"
#include "cli/model_setup.h"
#include "llm/generator.h"
#include "tokenizer/tokenizer.h"

namespace nbits::cli {
namespace {

int run_main(const std::vector<std::string>& args) {
  Flags f("run", "-m DIR [-p TEXT | --ids 1,2,3] [options]",
          "Generates text from an onnxruntime-genai model folder (model.onnx, genai_config.json,\n"
          "tokenizer.json). Streams the text to stdout; timings go to stderr.");
  f.str("-p,--prompt", "TEXT", "prompt text (BOS added when the tokenizer says so)");
  f.ints("--ids", "1,2,3", "prompt token ids, used as given (instead of -p)");
  f.choice("--format", {"text", "json"}, "text: stream text; json: one JSON object at the end", "text");
  f.flag("--no-bos", "do not add the tokenizer's special tokens (BOS) to -p");
  add_model_flags(f);
  add_sampling_flags(f);
  if (auto rc = f.parse(args)) return *rc;
  if (f.has("--prompt") && f.has("--ids")) return f.usage_error("give -p or --ids, not both");
  const bool json = f.get_str("--format") == "json";

  ModelSetup m = load_model_setup(f, /*need_tokenizer=*/!f.has("--ids"));
  std::vector<int32_t> prompt;
  if (f.has("--ids")) {
    for (int64_t id : f.get_ints("--ids")) {
      NBITS_CHECK(id >= 0 && id <= INT32_MAX, "--ids: token id ", id, " is out of range");
      prompt.push_back(static_cast<int32_t>(id));
    }
  } else {
    prompt = m.tokenizer->encode(f.get_str("--prompt"), !f.get_flag("--no-bos"));
  }
  NBITS_CHECK(!prompt.empty(), "the prompt is empty (with --no-bos, give some text)");
  llm::Sampler sampler(sampling_options(f, m.generator->config()));

  std::optional<StreamDecoder> stream;
  std::string text;
  if (m.tokenizer) {
    stream.emplace(*m.tokenizer, /*skip_special=*/true);
    std::string echo;
    for (int32_t id : prompt) echo += stream->push(id);
    if (!json) {
      std::fwrite(echo.data(), 1, echo.size(), stdout);
      std::fflush(stdout);
    }
  }
  auto result = m.generator->generate(prompt, f.get_i64("--n-predict"), sampler, [&](int32_t id) {
    if (stream) {
      std::string piece = stream->push(id);
      text += piece;
      if (!json && !piece.empty()) {
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
      }
    }
    return true;
  });
  if (stream) {
    std::string tail = stream->flush();
    text += tail;
    if (!json) std::fwrite(tail.data(), 1, tail.size(), stdout);
  }
  const llm::GenerationStats& st = m.generator->stats();
  if (json) {
    std::string out = "{\"prompt_ids\":" + json_int_list(prompt) + ",\"ids\":" + json_int_list(result.ids);
    char nums[160];
    std::snprintf(nums, sizeof nums, ",\"prefill_tok_s\":%.3f,\"decode_ms_per_token\":%.4f}\n",
                  st.prefill_tok_s(), st.decode_ms_per_token());
    out += ",\"text\":" + json_quote(text) + nums;
    std::fputs(out.c_str(), stdout);
  } else {
    std::fputs("\n", stdout);
    std::fflush(stdout);
    std::fprintf(stderr, "prompt: %lld tokens, %.1f tok/s; decode: %zu tokens, %.3f ms/token\n",
                 static_cast<long long>(prompt.size()), st.prefill_tok_s(), result.ids.size(),
                 st.decode_ms_per_token());
  }
  if (f.get_flag("--profile")) print_profile(m.generator->session(), stderr);
  return 0;
}

}  // namespace

NBITS_COMMAND("run", "generate text from a model folder", run_main);

}  // namespace nbits::cli
