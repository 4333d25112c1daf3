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
#include "cli/guidance_flags.h"
#include "cli/model_setup.h"
#include "cli/reply_printer.h"
#include "cli/scoring.h"
#include "cli/speculation.h"
#include "llm/generator.h"
#include "llm/stream_generate.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

namespace nbits::cli {
namespace {

int run_main(const std::vector<std::string>& args) {
  std::vector<std::string> formats = {"auto"};
  for (const auto& n : builtin_chat_formats()) formats.push_back(n);
  Flags f("run", "-m MODEL [-p TEXT | --ids 1,2,3] [options]",
          "Generates text from a model (an onnxruntime-genai or Optimum folder, or a .gguf file).\n"
          "Streams the text to stdout; timings go to stderr. -p is continued as raw text; with --chat\n"
          "it is one user message rendered through the model's chat template (instruct models).");
  f.str("-p,--prompt", "TEXT", "prompt text (BOS added when the tokenizer says so)");
  f.flag("--chat", "-p is a user message: render it with the chat template and answer it");
  f.str("--system", "TEXT", "with --chat: a system message before it");
  f.choice("--chat-format", formats, "with --chat: auto = the tokenizer's chat template, or a built-in one",
           "auto");
  f.ints("--ids", "1,2,3", "prompt token ids, used as given (instead of -p)");
  f.choice("--format", {"text", "json"}, "text: stream text; json: one JSON object at the end", "text");
  f.flag("--no-bos", "do not add the tokenizer's special tokens (BOS) to -p");
  f.i64("--logprobs", "K",
        "with --format json: per generated token its logprob and the K most likely tokens.\n"
        "                             Log-softmax of the raw logits, before any sampling transform\n"
        "                             (repetition penalty, temperature, top-k/p)",
        std::nullopt, 0, 1000);
  f.str("--teacher-force", "IDS",
        "score the given continuation (1,2,3 or @FILE of ids) instead of generating:\n"
        "                             each forced token's logprob (+ top --logprobs K); needs --format json");
  add_model_flags(f);
  add_sampling_flags(f);
  add_speculation_flags(f);
  add_guidance_flags(f);
  add_reasoning_flags(f);
  if (auto rc = f.parse(args)) return *rc;
  if (f.has("--prompt") && f.has("--ids")) return f.usage_error("give -p or --ids, not both");
  const bool chat = f.get_flag("--chat");
  if (chat && !f.has("--prompt")) return f.usage_error("--chat needs the user message as -p TEXT");
  if (!chat && (f.given("--system") || f.given("--chat-format")))
    return f.usage_error("--system and --chat-format go with --chat");
  const bool json = f.get_str("--format") == "json";
  if ((f.has("--logprobs") || f.has("--teacher-force")) && !json)
    return f.usage_error("--logprobs and --teacher-force write JSON: add --format json");
  const int64_t top_k = f.has("--logprobs") ? f.get_i64("--logprobs") : 0;
  const bool speculate = f.get_str("--spec") != "off" || f.has("--draft-model");
  if (speculate && (f.has("--logprobs") || f.has("--teacher-force")))
    return f.usage_error("--logprobs and --teacher-force score one step at a time: leave out --spec");

  ModelSetup m = load_model_setup(f, /*need_tokenizer=*/!f.has("--ids"));
  std::vector<int32_t> prompt;
  std::string rendered;  // --chat: the prompt as the template wrote it
  if (f.has("--ids")) {
    for (int64_t id : f.get_ints("--ids")) {
      NBITS_CHECK(id >= 0 && id <= INT32_MAX, "--ids: token id ", id, " is out of range");
      prompt.push_back(static_cast<int32_t>(id));
    }
  } else if (chat) {
    std::vector<ChatMessage> messages;
    if (f.has("--system")) messages.push_back({"system", f.get_str("--system")});
    messages.push_back({"user", f.get_str("--prompt")});
    // The template writes the special tokens (BOS among them) itself.
    rendered =
        render_chat(*m.tokenizer, messages, /*add_generation_prompt=*/true, f.get_str("--chat-format"));
    prompt = m.tokenizer->encode(rendered, /*add_special=*/false);
  } else {
    prompt = m.tokenizer->encode(f.get_str("--prompt"), !f.get_flag("--no-bos"));
  }
  NBITS_CHECK(!prompt.empty(), "the prompt is empty (with --no-bos, give some text)");
  // One step's JSON: the chosen (or forced) token, its logprob, the top-K.
  std::string logprobs_json;
  double logprob_sum = 0;
  auto token_json = [&](int32_t id, double lp) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "{\"id\":%d,\"logprob\":%.9g", id, lp);
    std::string out = buf;
    if (m.tokenizer) out += ",\"token\":" + json_quote(m.tokenizer->id_to_token(id));
    return out;
  };
  auto score = [&](std::span<const float> logits, int32_t id) {
    NBITS_CHECK(id >= 0 && static_cast<size_t>(id) < logits.size(), "token id ", id,
                " is out of range for the vocabulary of ", logits.size());
    const double lse = log_sum_exp(logits);
    const double lp = static_cast<double>(logits[static_cast<size_t>(id)]) - lse;
    logprob_sum += lp;
    if (!logprobs_json.empty()) logprobs_json += ',';
    logprobs_json += token_json(id, lp);
    logprobs_json += ",\"top\":[";
    const std::vector<TokenLogprob> top = top_logprobs(logits, top_k, lse);
    for (size_t i = 0; i < top.size(); ++i) {
      if (i) logprobs_json += ',';
      logprobs_json += token_json(top[i].id, top[i].logprob);
      logprobs_json += '}';
    }
    logprobs_json += "]}";
  };
  auto sum_json = [&](size_t n) {
    char buf[128];
    std::snprintf(buf, sizeof buf, ",\"sum_logprob\":%.17g,\"mean_logprob\":%.17g", logprob_sum,
                  n ? logprob_sum / static_cast<double>(n) : 0.0);
    return std::string(buf);
  };

  if (f.has("--teacher-force")) {
    // The prompt in one step, then the forced tokens one per step, exactly as generation feeds
    // them: the logprobs equal generation's. (One prefill of the forced ids would run the tile
    // attention instead of the one-position one: with int8 activations the different fp32 order
    // moves roundings by up to ~0.1 nats on stories260K int4.)
    const std::vector<int32_t> forced = parse_id_list(f.get_str("--teacher-force"), "--teacher-force");
    llm::Generator& g = *m.generator;
    NBITS_CHECK(static_cast<int64_t>(prompt.size() + forced.size()) - 1 <= g.capacity(), "prompt (",
                prompt.size(), ") + forced continuation (", forced.size(), ") do not fit the context of ",
                g.capacity());
    std::span<const float> last = g.append(prompt);
    const std::vector<float> first(last.begin(), last.end());
    score(first, forced[0]);
    for (size_t i = 1; i < forced.size(); ++i)
      score(g.append(std::span<const int32_t>(&forced[i - 1], 1)), forced[i]);
    std::string out = "{\"prompt_ids\":" + json_int_list(prompt) +
                      ",\"forced_ids\":" + json_int_list(forced) + ",\"logprobs\":[" + logprobs_json + "]" +
                      sum_json(forced.size());
    if (m.tokenizer) out += ",\"text\":" + json_quote(m.tokenizer->decode(forced, /*skip_special=*/true));
    out += "}\n";
    std::fputs(out.c_str(), stdout);
    if (f.get_flag("--profile")) print_profile(m.generator->session(), stderr);
    return 0;
  }

  llm::Sampler sampler(sampling_options(f, m.generator->config()));
  const GuidanceFlags guide(f, m);
  sampler.set_constraint(guide.constraint());
  // Constrained output: the tokens the spec forces run in verify steps (fast-forward), unless
  // every step is scored on its own (--logprobs).
  Speculation spec(f, m, guide.on() && !f.has("--logprobs"));

  // --chat: the answer to stdout, its reasoning apart.
  std::optional<ReplyPrinter> reply;
  if (chat && !json)
    reply.emplace(chat_reasoning_format(*m.tokenizer, f.get_str("--chat-format")), rendered,
                  f.get_flag("--hide-reasoning"));
  std::optional<StreamDecoder> stream;
  if (m.tokenizer) {
    stream.emplace(*m.tokenizer, /*skip_special=*/!(reply && reply->keeps_special()));
    std::string echo;
    for (int32_t id : prompt) echo += stream->push(id);
    if (!json && !chat) {  // with --chat only the answer is printed
      std::fwrite(echo.data(), 1, echo.size(), stdout);
      std::fflush(stdout);
    }
  }
  const bool want_logprobs = f.has("--logprobs");
  llm::TextResult tr = llm::generate_text(
      *m.generator, prompt, f.get_i64("--n-predict"), sampler, stream ? &*stream : nullptr,
      [&](std::string_view piece) {
        if (json) return;
        if (reply) return reply->push(piece);
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
      },
      [&](int32_t id) {
        if (want_logprobs) score(m.generator->last_logits(), id);
        return true;
      },
      spec.loop());
  const llm::GenerateResult& result = tr.generated;
  const std::string& text = tr.text;
  const llm::GenerationStats& st = m.generator->stats();
  if (json) {
    std::string out = "{\"prompt_ids\":" + json_int_list(prompt) + ",\"ids\":" + json_int_list(result.ids);
    char nums[160];
    std::snprintf(nums, sizeof nums, ",\"prefill_tok_s\":%.3f,\"decode_ms_per_token\":%.4f}\n",
                  st.prefill_tok_s(), st.decode_ms_per_token());
    if (want_logprobs) out += ",\"logprobs\":[" + logprobs_json + "]" + sum_json(result.ids.size());
    out += spec.json();
    out += ",\"text\":" + json_quote(text) + nums;
    std::fputs(out.c_str(), stdout);
  } else {
    if (reply)
      reply->finish();
    else
      std::fputs("\n", stdout);
    std::fflush(stdout);
    std::fprintf(stderr, "prompt: %lld tokens, %.1f tok/s; decode: %zu tokens, %.3f ms/token\n",
                 static_cast<long long>(prompt.size()), st.prefill_tok_s(), result.ids.size(),
                 st.decode_ms_per_token());
    spec.print_stats(stderr);
    // An instruct model given raw text often ends at once: say what to try.
    if (!chat && text.empty() && m.tokenizer && !m.tokenizer->chat_template().empty())
      std::fputs(
          "note: the model ended without text; it has a chat template: for an instruct model add --chat\n",
          stderr);
  }
  if (f.get_flag("--profile")) print_profile(m.generator->session(), stderr);
  return 0;
}

}  // namespace

NBITS_COMMAND("run", "generate text from a model folder", run_main);

}  // namespace nbits::cli
