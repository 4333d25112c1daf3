// `nbits perplexity`: perplexity of a model on a text file, like llama.cpp's llama-perplexity.
//
// Rule (printed by the command): the text is tokenized without special tokens; windows of --ctx
// tokens start at 0, S, 2S, ... (S = --stride, default --ctx: non-overlapping chunks) while a
// whole window fits; each window is run from an empty cache, its first token replaced by BOS when
// the tokenizer adds one (as llama-perplexity does). A window scores the tokens at its positions
// p >= ctx/2 (every scored token sees at least ctx/2 tokens of its window) that no earlier window
// scored (p >= ctx - S after the first window). A token's NLL is -log_softmax(logits at p-1)[token].
// PPL = exp(mean NLL); its error is PPL * s / sqrt(n), s the sample standard deviation of the n NLLs
// (the standard error of the mean NLL, propagated through exp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/mapped_file.h"
#include "base/timer.h"
#include "cli/command.h"
#include "cli/common.h"
#include "cli/model_setup.h"
#include "cli/scoring.h"
#include "llm/generator.h"
#include "tokenizer/tokenizer.h"

namespace nbits::cli {
namespace {

int perplexity_main(const std::vector<std::string>& args) {
  Flags f("perplexity",
          "-m DIR -f TEXT [--ctx 512] [--stride N] [--batch N] [--chunks N] [-t T] [--format json]",
          "Perplexity of the model on a text file (llama-perplexity's method). --ctx N is the window\n"
          "length in tokens (default 512; also the KV cache length). Windows start every --stride\n"
          "tokens (default --ctx: non-overlapping) and each is run from an empty cache, its first\n"
          "token replaced by BOS when the tokenizer adds one. A window scores its tokens at positions\n"
          ">= ctx/2 (the second half) that no earlier window scored. Progress per window goes to\n"
          "stderr; the result (PPL +/- PPL*s/sqrt(n), s the NLLs' sample standard deviation) to stdout.");
  f.str("-f,--file", "TEXT", "text file to score", true);
  f.i64("--stride", "N", "tokens between window starts (default: --ctx)", std::nullopt, 1);
  f.i64("--batch", "N", "tokens per prefill step within a window (default: the whole window)", std::nullopt,
        1);
  f.i64("--chunks", "N", "score at most the first N windows (llama-perplexity's --chunks; default: all)",
        std::nullopt, 1);
  f.choice("--format", {"text", "json"}, "text: one result line; json: one JSON object", "text");
  add_model_flags(f);
  if (auto rc = f.parse(args)) return *rc;
  const bool json = f.get_str("--format") == "json";
  const int64_t ctx = f.has("--ctx") ? f.get_i64("--ctx") : 512;
  NBITS_CHECK(ctx >= 2, "--ctx ", ctx, " is too small: a window needs at least 2 tokens");
  const int64_t stride = f.has("--stride") ? f.get_i64("--stride") : ctx;
  NBITS_CHECK(stride <= ctx, "--stride ", stride, " is larger than --ctx ", ctx,
              " (tokens would be skipped)");
  const int64_t batch = f.has("--batch") ? std::min(f.get_i64("--batch"), ctx) : ctx;
  const std::string path = f.get_str("--file");
  NBITS_CHECK(file_exists(path), "text file '", printable(path), "' does not exist");
  const std::string text = read_text_file(path);
  NBITS_CHECK(!text.empty(), "text file '", printable(path), "' is empty");

  ModelSetup m = load_model_setup(f, /*need_tokenizer=*/true);
  llm::Generator& gen = *m.generator;
  NBITS_CHECK(gen.capacity() >= ctx, "--ctx ", ctx, f.has("--ctx") ? "" : " (the default)",
              " exceeds the model's context of ", gen.capacity(), " tokens");
  const Tokenizer& tok = *m.tokenizer;
  std::vector<int32_t> ids = tok.encode(text, /*add_special=*/false);
  const std::vector<int32_t> probe = tok.encode("a", /*add_special=*/true);
  const int32_t bos =
      tok.bos_id() >= 0 && !probe.empty() && probe.front() == tok.bos_id() ? tok.bos_id() : -1;
  const auto n_tokens = static_cast<int64_t>(ids.size());
  NBITS_CHECK(n_tokens >= ctx, "'", printable(path), "' has ", n_tokens,
              " tokens, fewer than one window of --ctx ", ctx);
  int64_t windows = (n_tokens - ctx) / stride + 1;
  if (f.has("--chunks")) windows = std::min(windows, f.get_i64("--chunks"));
  const int64_t half = ctx / 2;
  std::fprintf(
      stderr,
      "perplexity: %lld tokens, %lld window(s) of %lld (stride %lld); scoring positions >= %lld of each "
      "window not scored before%s\n",
      static_cast<long long>(n_tokens), static_cast<long long>(windows), static_cast<long long>(ctx),
      static_cast<long long>(stride), static_cast<long long>(half),
      bos >= 0 ? "; first token of each window -> BOS" : "");

  std::vector<double> nll;
  std::vector<int32_t> window(static_cast<size_t>(ctx));
  std::vector<double> window_ppl;
  double sum = 0;
  Stopwatch sw;
  for (int64_t w = 0; w < windows; ++w) {
    const int64_t start = w * stride;
    std::copy(ids.begin() + start, ids.begin() + start + ctx, window.begin());
    if (bos >= 0) window[0] = bos;
    const int64_t lo = w == 0 ? half : std::max(half, ctx - stride);
    gen.reset();
    double wsum = 0;
    int64_t wn = 0;
    for (int64_t b = 0; b < ctx; b += batch) {
      const int64_t len = std::min(batch, ctx - b);
      // Rows of this step predict positions b+1 .. b+len; none needed below lo.
      std::span<const float> rows = gen.append_all_logits(
          std::span<const int32_t>(window).subspan(static_cast<size_t>(b), static_cast<size_t>(len)));
      const auto V = static_cast<size_t>(gen.vocab_size());
      for (int64_t r = 0; r < len; ++r) {
        const int64_t p = b + r + 1;  // the position this row predicts
        if (p < lo || p >= ctx) continue;
        std::span<const float> row = rows.subspan(static_cast<size_t>(r) * V, V);
        const int32_t target = window[static_cast<size_t>(p)];
        NBITS_CHECK(target >= 0 && static_cast<size_t>(target) < V, "token id ", target,
                    " is out of range for the vocabulary of ", V);
        const double x = log_sum_exp(row) - row[static_cast<size_t>(target)];
        nll.push_back(x);
        sum += x;
        wsum += x;
        ++wn;
      }
    }
    window_ppl.push_back(std::exp(wsum / static_cast<double>(std::max<int64_t>(wn, 1))));
    // Progress with an estimate of the time left (the windows cost alike).
    const double spent = sw.elapsed_s(),
                 left = spent / static_cast<double>(w + 1) * static_cast<double>(windows - w - 1);
    std::fprintf(stderr, "[%lld/%lld] ppl %.4f, %.0f s, about %.0f s left\n", static_cast<long long>(w + 1),
                 static_cast<long long>(windows), std::exp(sum / static_cast<double>(nll.size())), spent,
                 left);
  }
  const double seconds = sw.elapsed_s();
  const auto n = static_cast<double>(nll.size());
  const double mean = sum / n;
  double ss = 0;
  for (double x : nll) ss += (x - mean) * (x - mean);
  const double sd = nll.size() > 1 ? std::sqrt(ss / (n - 1)) : 0.0;
  const double ppl = std::exp(mean);
  const double err = ppl * sd / std::sqrt(n);
  const double tok_s = seconds > 0 ? static_cast<double>(windows * ctx) / seconds : 0;
  if (json) {
    std::string out = "{";
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "\"ppl\":%.17g,\"ppl_err\":%.17g,\"mean_nll\":%.17g,\"nll_sd\":%.17g,\"tokens_scored\":%zu,"
                  "\"tokens\":%lld,\"windows\":%lld,\"ctx\":%lld,\"stride\":%lld,\"batch\":%lld,\"bos\":%s,"
                  "\"seconds\":%.6f,\"tok_s\":%.3f,\"window_ppl\":[",
                  ppl, err, mean, sd, nll.size(), static_cast<long long>(n_tokens),
                  static_cast<long long>(windows), static_cast<long long>(ctx),
                  static_cast<long long>(stride), static_cast<long long>(batch), bos >= 0 ? "true" : "false",
                  seconds, tok_s);
    out += buf;
    for (size_t i = 0; i < window_ppl.size(); ++i) {
      std::snprintf(buf, sizeof buf, "%s%.17g", i ? "," : "", window_ppl[i]);
      out += buf;
    }
    out += "]}\n";
    std::fputs(out.c_str(), stdout);
  } else {
    std::printf(
        "perplexity: %.4f +/- %.4f (%zu tokens scored in %lld window%s of %lld, stride %lld; %.1f tok/s)\n",
        ppl, err, nll.size(), static_cast<long long>(windows), windows == 1 ? "" : "s",
        static_cast<long long>(ctx), static_cast<long long>(stride), tok_s);
  }
  if (f.get_flag("--profile")) print_profile(gen.session(), stderr);
  return 0;
}

}  // namespace

NBITS_COMMAND("perplexity", "perplexity of a model on a text file (llama-perplexity's method)",
              perplexity_main);

}  // namespace nbits::cli
