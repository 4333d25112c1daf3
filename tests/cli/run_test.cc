// `nbits run` end to end on stories260K: token-exact against ONNX Runtime's
// greedy sequences and llama2.c's text; nbits patch round trip.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_util.h"
#include "onnx/onnx_test_util.h"

namespace nbits::testing {
namespace {

using nlohmann::json;

std::string stories(const std::string& rel) { return shared_path("models/stories260K/" + rel); }

// ORT's greedy continuation from [BOS] (its "seq" starts with the prompt).
std::vector<int32_t> ort_greedy(const std::string& variant, size_t n) {
  const json ref = json::parse(slurp_text(stories("reference/onnx_greedy_ort.json")));
  std::vector<int32_t> seq = ref.at(variant + "|").at("seq").get<std::vector<int32_t>>();
  seq.erase(seq.begin());
  if (seq.size() > n) seq.resize(n);
  return seq;
}

TEST(CliRun, GreedyIdsMatchOnnxRuntime) {
  NBITS_REQUIRE_BIN();
  NBITS_REQUIRE_SHARED(stories("reference/onnx_greedy_ort.json"));
  // Tokens compared per variant: the int8-activation variants drift from ORT at
  // the ulp level after some tokens (first divergence here: int4 123, int8 114, int4_asym 26).
  const std::vector<std::pair<std::string, size_t>> cases = {
      {"int4", 32},       {"int8", 32},       {"int4_asym", 16},      {"fp32", 128},
      {"int4_acc0", 128}, {"int8_acc0", 128}, {"int4_asym_acc0", 128}};
  for (const auto& [variant, n] : cases) {
    const json j = run_json({"run", "-m", stories("onnx_" + variant), "--ids", "1", "-n", std::to_string(n),
                             "--format", "json", "-t", "1"});
    EXPECT_EQ(j.value("prompt_ids", std::vector<int32_t>{}), std::vector<int32_t>{1}) << variant;
    EXPECT_EQ(ids_of(j), ort_greedy(variant, n)) << variant;
    EXPECT_GT(j.value("prefill_tok_s", 0.0), 0.0) << variant;
  }
}

// --kv-cache q8 end to end: the fp32 export's greedy ids with int8 K/V rows follow ORT's fp32 ones
// (the first 8 asserted; int8 rounding may move a later near-tie), and a bad value is refused.
TEST(CliRun, KvCacheQ8FollowsFp32) {
  NBITS_REQUIRE_BIN();
  NBITS_REQUIRE_SHARED(stories("reference/onnx_greedy_ort.json"));
  const json j = run_json({"run", "-m", stories("onnx_fp32"), "--ids", "1", "-n", "32", "--kv-cache", "q8",
                           "--format", "json", "-t", "1"});
  const std::vector<int32_t> got = ids_of(j), want = ort_greedy("fp32", 32);
  ASSERT_EQ(got.size(), 32u);
  size_t same = 0;
  while (same < got.size() && got[same] == want[same]) ++same;
  std::printf("[kv q8] nbits run --kv-cache q8: %zu of 32 greedy ids equal ORT's fp32 ones\n", same);
  EXPECT_GE(same, 8u);
  RunResult bad = run_nbits({"run", "-m", stories("onnx_fp32"), "--ids", "1", "--kv-cache", "q4"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--kv-cache"), std::string::npos) << bad.err;
}

TEST(CliRun, Fp32TextFromEmptyPromptMatchesLlama2c) {
  NBITS_REQUIRE_BIN();
  NBITS_REQUIRE_SHARED(stories("reference/greedy_256.txt"));
  const json j =
      run_json({"run", "-m", stories("onnx_fp32"), "-p", "", "-n", "200", "--format", "json", "-t", "1"});
  EXPECT_EQ(j.value("prompt_ids", std::vector<int32_t>{}),
            std::vector<int32_t>{1});  // BOS from the tokenizer
  const std::string text = j.value("text", "");
  const std::string ref = slurp_text(stories("reference/greedy_256.txt"));
  ASSERT_GT(text.size(), 400u);
  EXPECT_EQ(ref.substr(0, text.size()), text);
  // Text mode streams the same text.
  RunResult r = run_nbits({"run", "-m", stories("onnx_fp32"), "-p", "", "-n", "200", "-t", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, text + "\n");
  ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
  EXPECT_EQ(r.err_lines()[0].rfind("prompt: 1 tokens, ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("decode: 200 tokens, "), std::string::npos) << r.err;
}

TEST(CliRun, PromptTextGetsBosAndEchoes) {
  NBITS_REQUIRE_BIN();
  NBITS_REQUIRE_SHARED(stories("reference/onnx_greedy_ort.json"));
  const json j = run_json({"run", "-m", stories("onnx_fp32"), "-p", "Once upon a time", "-n", "16",
                           "--format", "json", "-t", "1"});
  const std::vector<int32_t> prompt = j.value("prompt_ids", std::vector<int32_t>{});
  const std::vector<int32_t> all = ort_greedy("fp32", 20);
  // llama2.c's greedy story starts with "Once upon a time": the same ids.
  ASSERT_EQ(prompt.size(), 5u);
  EXPECT_EQ(prompt[0], 1);
  EXPECT_EQ(std::vector<int32_t>(prompt.begin() + 1, prompt.end()),
            std::vector<int32_t>(all.begin(), all.begin() + 4));
  EXPECT_EQ(ids_of(j), std::vector<int32_t>(all.begin() + 4, all.begin() + 20));
  RunResult r =
      run_nbits({"run", "-m", stories("onnx_fp32"), "-p", "Once upon a time", "-n", "4", "-t", "1"});
  EXPECT_EQ(r.out.rfind("Once upon a time", 0), 0u) << r.out;
}

TEST(CliRun, PatchedAndOverriddenAccuracyLevelGiveTheInt4Tokens) {
  NBITS_REQUIRE_BIN();
  NBITS_REQUIRE_SHARED(stories("onnx_int4_acc0/model.onnx"));
  TempDir dir;
  for (const char* f : {"genai_config.json", "tokenizer.json", "tokenizer_config.json"})
    std::filesystem::copy_file(stories(std::string("onnx_int4_acc0/") + f), dir.file(f));
  RunResult p = run_nbits(
      {"patch", stories("onnx_int4_acc0/model.onnx"), dir.file("model.onnx"), "--accuracy-level", "4"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const std::vector<std::string> common = {"--ids", "1", "-n", "64", "--format", "json", "-t", "1"};
  auto run_ids = [&](std::vector<std::string> args) {
    args.insert(args.end(), common.begin(), common.end());
    return ids_of(run_json(args));
  };
  const std::vector<int32_t> int4 = run_ids({"run", "-m", stories("onnx_int4")});
  ASSERT_EQ(int4.size(), 64u);
  EXPECT_EQ(run_ids({"run", "-m", dir.path()}), int4);
  EXPECT_EQ(run_ids({"run", "-m", stories("onnx_int4_acc0"), "--accuracy-level", "4"}), int4);
  // And the unpatched file really is different (else this test proves nothing).
  EXPECT_NE(run_ids({"run", "-m", stories("onnx_int4_acc0")}), int4);
  // External data gives the same as inline.
  EXPECT_EQ(run_ids({"run", "-m", stories("onnx_int4_extdata")}), int4);
}

TEST(CliRun, SamplingIsSeededAndThreadsDoNotChangeGreedy) {
  NBITS_REQUIRE_BIN();
  NBITS_REQUIRE_SHARED(stories("onnx_int4/model.onnx"));
  auto sample = [&](const std::string& seed) {
    return ids_of(run_json({"run", "-m", stories("onnx_int4"), "--ids", "1", "-n", "40", "--format", "json",
                            "--temp", "1.0", "--top-k", "40", "--top-p", "0.95", "--seed", seed, "-t", "1"}));
  };
  const auto a = sample("7");
  EXPECT_EQ(a, sample("7"));
  EXPECT_NE(a, sample("8"));
  const auto g1 = ids_of(
      run_json({"run", "-m", stories("onnx_int4"), "--ids", "1", "-n", "40", "--format", "json", "-t", "1"}));
  const auto g2 = ids_of(
      run_json({"run", "-m", stories("onnx_int4"), "--ids", "1", "-n", "40", "--format", "json", "-t", "2"}));
  EXPECT_EQ(g1, g2);
}

// An Optimum / transformers.js folder (tools/optimum_models/make.py's stories260K export): the
// decoder chosen without --variant is named on stderr, --variant picks another, and both give
// ONNX Runtime's greedy ids (onnx/<stem>.ref.json).
TEST(CliRun, OptimumFolderVariants) {
  NBITS_REQUIRE_BIN();
  const char* home = std::getenv("HOME");
  const std::string cache = std::getenv("NBITS_CACHE") ? std::getenv("NBITS_CACHE")
                                                       : std::string(home ? home : "/root") + "/.cache/nbits";
  const std::string folder = cache + "/optimum-models/stories260k";
  for (const std::string stem : {"model_q4", "model"}) {
    const std::string ref_path = folder + "/onnx/" + stem + ".ref.json";
    NBITS_REQUIRE_SHARED(ref_path);
    const auto ref = nlohmann::json::parse(slurp_text(ref_path));
    std::string ids;
    for (int32_t id : ref["prompt"].get<std::vector<int32_t>>()) {
      if (!ids.empty()) ids += ',';
      ids += std::to_string(id);
    }
    std::vector<std::string> args = {"run", "-m", folder, "--ids", ids, "-n", "8", "--format", "json"};
    if (stem == "model") args.insert(args.end(), {"--variant", "fp32"});
    const RunResult r = run_nbits(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto got = nlohmann::json::parse(r.out)["ids"].get<std::vector<int32_t>>();
    const auto want = ref["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(got, std::vector<int32_t>(want.begin(), want.begin() + 8)) << stem;
    const bool named =
        r.err.find("model: " + folder + "/onnx/model_q4.onnx (--variant picks another") != std::string::npos;
    EXPECT_EQ(named, stem == "model_q4") << r.err;
    // stories260K's q4 file: its fp32 embedding is smaller than the quantized weights (no note).
    EXPECT_EQ(r.err.find("float MatMul weights"), std::string::npos) << r.err;
  }
}

// A q4 file whose tied fp32 lm_head outweighs its quantized weights (make.py's smollm3: vocab 512
// x hidden 64 fp32 against two small layers) says so once on stderr, pointing at
// --requantize-float; with it given, the lm_head is quantized and nothing is said.
TEST(CliRun, FloatLmHeadNote) {
  NBITS_REQUIRE_BIN();
  const char* home = std::getenv("HOME");
  const std::string cache = std::getenv("NBITS_CACHE") ? std::getenv("NBITS_CACHE")
                                                       : std::string(home ? home : "/root") + "/.cache/nbits";
  const std::string model = cache + "/optimum-models/smollm3/onnx/model_q4.onnx";
  NBITS_REQUIRE_SHARED(model);
  const RunResult keep = run_nbits({"run", "-m", model, "--ids", "1,2,3", "-n", "2", "--format", "json"});
  ASSERT_EQ(keep.exit_code, 0) << keep.err;
  EXPECT_NE(keep.err.find("MB of float MatMul weights (e.g. a tied fp32 lm_head) are read every token"),
            std::string::npos)
      << keep.err;
  EXPECT_NE(keep.err.find("--requantize-float q4"), std::string::npos) << keep.err;
  const RunResult q4 = run_nbits(
      {"run", "-m", model, "--ids", "1,2,3", "-n", "2", "--format", "json", "--requantize-float", "q4"});
  ASSERT_EQ(q4.exit_code, 0) << q4.err;
  EXPECT_EQ(q4.err.find("float MatMul weights"), std::string::npos) << q4.err;
}

}  // namespace
}  // namespace nbits::testing
