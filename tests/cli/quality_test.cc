// `nbits perplexity` and `nbits run --logprobs / --teacher-force` on the real stories260K model:
// the perplexity and its error estimate against a computation done here from the Generator's
// logits (one token per step, the same rule), logprob normalisation, teacher forcing against
// generation, and the bad inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "cli_util.h"
#include "llm/generator.h"
#include "support/source_dir.h"
#include "tokenizer/tokenizer.h"

namespace nbits::testing {
namespace {

using nlohmann::json;

std::string stories(const std::string& rel) { return shared_path("models/stories260K/" + rel); }
std::string story_text() { return std::string(nbits::testing::source_dir()) + "/tests/cli/data/story.txt"; }

struct Reference {
  double ppl = 0, err = 0;
  size_t scored = 0;
  int64_t windows = 0;
};

// The documented rule, computed one token per decode step (not the command's batched prefill):
// windows of ctx every stride tokens, first token -> BOS, score positions p >= ctx/2 not scored
// by an earlier window (p >= ctx - stride after the first), NLL from log-softmax in double.
Reference reference_perplexity(const std::string& model, int64_t ctx, int64_t stride) {
  Tokenizer tok = Tokenizer::load(model);
  auto gen = llm::Generator::load(model, {}, ctx);
  std::vector<int32_t> ids = tok.encode(read_text_file(story_text()), false);
  const auto n = static_cast<int64_t>(ids.size());
  Reference r;
  r.windows = (n - ctx) / stride + 1;
  std::vector<double> nll;
  for (int64_t w = 0; w < r.windows; ++w) {
    std::vector<int32_t> win(ids.begin() + w * stride, ids.begin() + w * stride + ctx);
    win[0] = tok.bos_id();
    const int64_t lo = w == 0 ? ctx / 2 : std::max(ctx / 2, ctx - stride);
    gen->reset();
    for (int64_t p = 0; p + 1 < ctx; ++p) {
      std::span<const float> logits = gen->append(std::span<const int32_t>(&win[static_cast<size_t>(p)], 1));
      if (p + 1 < lo) continue;
      double mx = -INFINITY, sum = 0;
      for (float x : logits) mx = std::max(mx, static_cast<double>(x));
      for (float x : logits) sum += std::exp(x - mx);
      nll.push_back(mx + std::log(sum) - logits[static_cast<size_t>(win[static_cast<size_t>(p + 1)])]);
    }
  }
  double mean = 0;
  for (double x : nll) mean += x;
  mean /= static_cast<double>(nll.size());
  double ss = 0;
  for (double x : nll) ss += (x - mean) * (x - mean);
  const double sd = std::sqrt(ss / static_cast<double>(nll.size() - 1));
  r.ppl = std::exp(mean);
  r.err = r.ppl * sd / std::sqrt(static_cast<double>(nll.size()));
  r.scored = nll.size();
  return r;
}

TEST(CliPerplexity, MatchesTheRuleComputedFromGeneratorLogits) {
  NBITS_REQUIRE_BIN();
  NBITS_REQUIRE_SHARED(stories("onnx_fp32/model.onnx"));
  for (auto [ctx, stride] : {std::pair<int64_t, int64_t>{128, 128}, {128, 48}, {100, 100}}) {
    SCOPED_TRACE("ctx " + std::to_string(ctx) + " stride " + std::to_string(stride));
    const Reference ref = reference_perplexity(stories("onnx_fp32"), ctx, stride);
    const json j =
        run_json({"perplexity", "-m", stories("onnx_fp32"), "-f", story_text(), "--ctx", std::to_string(ctx),
                  "--stride", std::to_string(stride), "-t", "1", "--format", "json"});
    ASSERT_TRUE(j.contains("ppl"));
    EXPECT_EQ(j["tokens_scored"].get<size_t>(), ref.scored);
    EXPECT_EQ(j["windows"].get<int64_t>(), ref.windows);
    EXPECT_NEAR(j["ppl"].get<double>(), ref.ppl, 1e-4 * ref.ppl);
    EXPECT_NEAR(j["ppl_err"].get<double>(), ref.err, 1e-3 * ref.err);
    EXPECT_EQ(j["window_ppl"].size(), static_cast<size_t>(ref.windows));
    // The error estimate is PPL * sd / sqrt(n) of the command's own numbers.
    EXPECT_NEAR(
        j["ppl_err"].get<double>(),
        j["ppl"].get<double>() * j["nll_sd"].get<double>() / std::sqrt(j["tokens_scored"].get<double>()),
        1e-12);
    EXPECT_NEAR(std::log(j["ppl"].get<double>()), j["mean_nll"].get<double>(), 1e-12);
    EXPECT_TRUE(j["bos"].get<bool>());
  }
  // Scored tokens: the second half of the first window, then the new tokens of each later one.
  const json j = run_json({"perplexity", "-m", stories("onnx_fp32"), "-f", story_text(), "--ctx", "128",
                           "--stride", "48", "-t", "1", "--format", "json"});
  const int64_t windows = j["windows"].get<int64_t>();
  EXPECT_EQ(j["tokens_scored"].get<int64_t>(), 64 + (windows - 1) * 48);
}

TEST(CliPerplexity, BatchedStepsAndTextOutput) {
  NBITS_REQUIRE_BIN();
  NBITS_REQUIRE_SHARED(stories("onnx_int4/model.onnx"));
  const std::vector<std::string> base = {
      "perplexity", "-m", stories("onnx_int4"), "-f", story_text(), "--ctx", "128", "-t", "1"};
  std::vector<std::string> a = base, b = base;
  a.insert(a.end(), {"--format", "json"});
  b.insert(b.end(), {"--format", "json", "--batch", "37"});
  const json one = run_json(a), batched = run_json(b);
  EXPECT_NEAR(one["ppl"].get<double>(), batched["ppl"].get<double>(), 1e-4 * one["ppl"].get<double>());
  EXPECT_EQ(one["tokens_scored"], batched["tokens_scored"]);
  // Text: per-window progress on stderr, one result line on stdout.
  RunResult r = run_nbits(base);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("[1/6] ppl "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[6/6] ppl "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(", about 0 s left"), std::string::npos) << r.err;  // the last window: nothing left
  EXPECT_EQ(r.out.rfind("perplexity: ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find(" +/- "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("384 tokens scored in 6 windows of 128"), std::string::npos) << r.out;
}

void expect_one_line(const RunResult& r, const std::string& needle) {
  EXPECT_NE(r.exit_code, 0) << r.err;
  const auto lines = r.err_lines();
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_NE(lines[0].find(needle), std::string::npos) << lines[0];
}

TEST(CliPerplexity, BadInputsAreOneLineAndNonZero) {
  NBITS_REQUIRE_BIN();
  NBITS_REQUIRE_SHARED(stories("onnx_int4/model.onnx"));
  const std::string m = stories("onnx_int4");
  const std::string dir =
      std::filesystem::temp_directory_path().string() + "/nbits_ppl_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/empty.txt").close();
  std::ofstream(dir + "/short.txt") << "Once upon a time, there was a cat.";
  expect_one_line(run_nbits({"perplexity", "-m", m, "-f", dir + "/missing.txt"}), "does not exist");
  expect_one_line(run_nbits({"perplexity", "-m", m, "-f", dir + "/empty.txt"}), "is empty");
  expect_one_line(run_nbits({"perplexity", "-m", m, "-f", story_text(), "--ctx", "1"}),
                  "--ctx 1 is too small");
  expect_one_line(run_nbits({"perplexity", "-m", m, "-f", story_text(), "--ctx", "1024"}),
                  "--ctx 1024 exceeds the model's context of 512 tokens");
  expect_one_line(run_nbits({"perplexity", "-m", m, "-f", dir + "/short.txt", "--ctx", "64"}),
                  "fewer than one window of --ctx 64");
  expect_one_line(run_nbits({"perplexity", "-m", m, "-f", story_text(), "--ctx", "64", "--stride", "65"}),
                  "--stride 65 is larger than --ctx 64");
  expect_one_line(run_nbits({"perplexity", "-m", m}), "-f");
  std::filesystem::remove_all(dir);
}

TEST(CliLogprobs, NormalisedTopKAndTheChosenToken) {
  NBITS_REQUIRE_BIN();
  NBITS_REQUIRE_SHARED(stories("onnx_int4/model.onnx"));
  // K = the whole vocabulary (512): the probabilities sum to 1.
  const json j = run_json({"run", "-m", stories("onnx_int4"), "-p", "Once upon a time", "-n", "12",
                           "--format", "json", "--logprobs", "512", "-t", "1"});
  ASSERT_TRUE(j.contains("logprobs"));
  const json& lp = j["logprobs"];
  ASSERT_EQ(lp.size(), j["ids"].size());
  double sum = 0;
  for (size_t i = 0; i < lp.size(); ++i) {
    const json& s = lp[i];
    EXPECT_EQ(s["id"], j["ids"][i]);
    const json& top = s["top"];
    ASSERT_EQ(top.size(), 512u);
    double p = 0;
    for (size_t k = 0; k < top.size(); ++k) {
      p += std::exp(top[k]["logprob"].get<double>());
      if (k) {
        EXPECT_LE(top[k]["logprob"].get<double>(), top[k - 1]["logprob"].get<double>());
      }
    }
    EXPECT_NEAR(p, 1.0, 1e-6);
    // Greedy: the chosen token is the most likely one, with the same logprob.
    EXPECT_EQ(top[0]["id"], s["id"]);
    EXPECT_DOUBLE_EQ(top[0]["logprob"].get<double>(), s["logprob"].get<double>());
    EXPECT_LE(s["logprob"].get<double>(), 0.0);
    EXPECT_TRUE(s.contains("token"));
    sum += s["logprob"].get<double>();
  }
  EXPECT_NEAR(j["sum_logprob"].get<double>(), sum, 1e-6);
  // Small K: a prefix of the full list; existing fields unchanged.
  const json k3 = run_json({"run", "-m", stories("onnx_int4"), "-p", "Once upon a time", "-n", "12",
                            "--format", "json", "--logprobs", "3", "-t", "1"});
  EXPECT_EQ(k3["ids"], j["ids"]);
  EXPECT_EQ(k3["text"], j["text"]);
  for (size_t i = 0; i < lp.size(); ++i)
    for (size_t k = 0; k < 3; ++k) EXPECT_EQ(k3["logprobs"][i]["top"][k]["id"], lp[i]["top"][k]["id"]);
  // Without --logprobs the JSON has no logprobs.
  const json plain = run_json({"run", "-m", stories("onnx_int4"), "-p", "Once upon a time", "-n", "12",
                               "--format", "json", "-t", "1"});
  EXPECT_FALSE(plain.contains("logprobs"));
  EXPECT_EQ(plain["ids"], j["ids"]);
}

TEST(CliLogprobs, TeacherForcingTheGreedyContinuationGivesGenerationsLogprobs) {
  NBITS_REQUIRE_BIN();
  NBITS_REQUIRE_SHARED(stories("onnx_fp32/model.onnx"));
  for (const char* variant : {"onnx_fp32", "onnx_int4"}) {
    SCOPED_TRACE(variant);
    const json g = run_json({"run", "-m", stories(variant), "-p", "Once upon a time", "-n", "24", "--format",
                             "json", "--logprobs", "4", "-t", "1"});
    std::string ids;
    for (const json& id : g["ids"]) {
      if (!ids.empty()) ids += ',';
      ids += std::to_string(id.get<int32_t>());
    }
    const json t = run_json({"run", "-m", stories(variant), "-p", "Once upon a time", "--teacher-force", ids,
                             "--format", "json", "--logprobs", "4", "-t", "1"});
    ASSERT_EQ(t["forced_ids"], g["ids"]);
    EXPECT_EQ(t["prompt_ids"], g["prompt_ids"]);
    ASSERT_EQ(t["logprobs"].size(), g["logprobs"].size());
    for (size_t i = 0; i < g["logprobs"].size(); ++i) {
      const json &a = g["logprobs"][i], &b = t["logprobs"][i];
      EXPECT_EQ(a["id"], b["id"]) << i;
      EXPECT_NEAR(a["logprob"].get<double>(), b["logprob"].get<double>(), 1e-3) << i;
      for (size_t k = 0; k < 4; ++k) {
        EXPECT_EQ(a["top"][k]["id"], b["top"][k]["id"]) << i << " " << k;
        EXPECT_NEAR(a["top"][k]["logprob"].get<double>(), b["top"][k]["logprob"].get<double>(), 1e-3);
      }
    }
    EXPECT_NEAR(t["sum_logprob"].get<double>(), g["sum_logprob"].get<double>(), 1e-2);
    EXPECT_EQ(t["text"], g["text"]);
  }
  // @file: ids separated by commas and/or whitespace.
  const std::string f =
      std::filesystem::temp_directory_path().string() + "/nbits_tf_" + std::to_string(::getpid());
  std::ofstream(f) << "432, 383\n286\n";
  const json t = run_json({"run", "-m", stories("onnx_int4"), "-p", "Once upon a time", "--teacher-force",
                           "@" + f, "--format", "json", "-t", "1"});
  EXPECT_EQ(t["forced_ids"], json::array({432, 383, 286}));
  EXPECT_EQ(t["logprobs"][0]["top"].size(), 0u);  // no --logprobs: the forced tokens only
  std::filesystem::remove(f);
}

TEST(CliLogprobs, BadFlags) {
  NBITS_REQUIRE_BIN();
  NBITS_REQUIRE_SHARED(stories("onnx_int4/model.onnx"));
  const std::string m = stories("onnx_int4");
  RunResult r = run_nbits({"run", "-m", m, "-p", "x", "--logprobs", "3"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("add --format json"), std::string::npos) << r.err;
  expect_one_line(run_nbits({"run", "-m", m, "-p", "x", "--teacher-force", "1,x", "--format", "json"}),
                  "--teacher-force: not a comma-separated list of token ids");
  expect_one_line(
      run_nbits({"run", "-m", m, "-p", "x", "--teacher-force", "@/nonexistent/ids", "--format", "json"}),
      "does not exist");
  expect_one_line(run_nbits({"run", "-m", m, "-p", "x", "--teacher-force", "1,99999", "--format", "json"}),
                  "out of range");
}

}  // namespace
}  // namespace nbits::testing
