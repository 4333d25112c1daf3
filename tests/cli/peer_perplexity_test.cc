// `nbits perplexity` against the peers on real SmolLM2-135M-Instruct weights (issue 11): the same
// text (GPL-3, shipped by every Debian system), the same rule (4 windows of 512, second halves
// scored), references written by tools/setup_models.sh:
//   - each onnxruntime-genai builder export against onnxruntime-genai's own og.Generator
//     (tools/quality/genai_perplexity.py): within 0.5%, on the same token ids. Where the export
//     computes with int8 activations (accuracy_level 4) and the two are further apart, the bound
//     widens by the peer's own distance from the exact product's perplexity (nbits at
//     --accuracy-level 0, equal to ORT's level 0 to 2e-6): int8 rounding is noise whose
//     realization moves perplexity; on int4 block 128 the exact 31.40 becomes 31.91 in ORT and
//     31.49 or 31.93 in nbits depending only on the fp32 attention's summation order (tile or
//     per-position kernel);
//   - the Q4_1 GGUF against llama.cpp (tools/quality/llamacpp_perplexity.mjs): within 1%, on
//     llama.cpp's own tokenization (which nbits' GGUF tokenizer reproduces; it differs from the HF
//     tokenizer.json here: "\n\n  0." splits differently).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "cli_util.h"

namespace nbits::testing {
namespace {

using nlohmann::json;

const char* const kText = "/usr/share/common-licenses/GPL-3";

std::string cache_dir() {
  if (const char* e = std::getenv("NBITS_CACHE"); e != nullptr && *e) return e;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "/root") + "/.cache/nbits";
}

std::string builder_models() {
  if (const char* e = std::getenv("NBITS_BUILDER_MODELS"); e != nullptr && *e) return e;
  return cache_dir() + "/builder-models";
}

json nbits_perplexity(const std::string& model, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"perplexity", "-m", model, "-f", kText,      "--ctx", "512",
                                   "--chunks",   "4",  "-t",  "2",  "--format", "json"};
  args.insert(args.end(), extra.begin(), extra.end());
  RunResult r = run_nbits(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? json::parse(r.out) : json::object();
}

// nbits' perplexity of `model` with the references' rule, compared with `ref_path`; int8_acts:
// the fallback rule above.
void expect_close(const std::string& model, const std::string& ref_path, double rel_tol,
                  bool int8_acts = false) {
  NBITS_REQUIRE_BIN();
  NBITS_REQUIRE_SHARED(model);
  NBITS_REQUIRE_SHARED(ref_path);
  NBITS_REQUIRE_SHARED(std::string(kText));
  const json ref = json::parse(read_text_file(ref_path));
  const json got = nbits_perplexity(model);
  ASSERT_TRUE(got.contains("ppl"));
  EXPECT_EQ(got["tokens"], ref["tokens"]) << "the text tokenized differently";
  EXPECT_EQ(got["tokens_scored"], ref["tokens_scored"]);
  EXPECT_EQ(got["bos"], ref["bos"]);
  const double a = got["ppl"], b = ref["ppl"];
  std::printf("%s: nbits %.4f, %s %.4f (%+.2f%%)\n", model.c_str(), a,
              ref["runtime"].get<std::string>().c_str(), b, 100.0 * (a / b - 1.0));
  if (std::fabs(a / b - 1.0) < rel_tol) return;
  ASSERT_TRUE(int8_acts) << "nbits " << a << " vs " << b << ": more than " << 100 * rel_tol << "% apart";
  const json exact = nbits_perplexity(model, {"--accuracy-level", "0"});
  ASSERT_TRUE(exact.contains("ppl"));
  const double e = exact["ppl"];
  const double bound = rel_tol + std::fabs(b / e - 1.0);
  std::printf("  exact product (accuracy level 0) %.4f: nbits %+.2f%%, peer %+.2f%%; bound %.2f%%\n", e,
              100.0 * (a / e - 1.0), 100.0 * (b / e - 1.0), 100.0 * bound);
  EXPECT_LT(std::fabs(a / b - 1.0), bound) << "further from the peer than the peer is from the exact product";
}

class GenaiPerplexity : public ::testing::TestWithParam<std::string> {};

TEST_P(GenaiPerplexity, WithinHalfAPercentOfOnnxruntimeGenai) {
  const std::string v = GetParam();
  const bool int8_acts = v == "int4" || v == "int4_b128" || v == "int8";
  expect_close(builder_models() + "/smollm2_" + v, cache_dir() + "/quality/smollm2_" + v + ".genai_ppl.json",
               5e-3, int8_acts);
}

INSTANTIATE_TEST_SUITE_P(SmolLM2, GenaiPerplexity,
                         ::testing::Values("int4", "int4_acc0", "int4_b128", "int8", "fp16", "fp32"));

TEST(LlamaCppPerplexity, SmolLM2Q4_1WithinOnePercentOfLlamaCpp) {
  expect_close(cache_dir() + "/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
               cache_dir() + "/quality/smollm2_q4_1.llama_cpp_ppl.json", 1e-2);
}

// The real Qwen2.5-Coder-0.5B-Instruct Q4_K_M (Q5_0, Q8_0, Q4_K, Q6_K), fetched by setup_models.sh.
TEST(LlamaCppPerplexity, Qwen25Coder05BQ4_K_MWithinOnePercentOfLlamaCpp) {
  expect_close(cache_dir() + "/qwen25-coder/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
               cache_dir() + "/quality/qwen05_q4_k_m.llama_cpp_ppl.json", 1e-2);
}

}  // namespace
}  // namespace nbits::testing
