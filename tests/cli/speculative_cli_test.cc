// `nbits run --spec lookup | --spec draft --draft-model FILE`: the tokens of plain decoding (greedy and
// seeded sampling), on stories260K and on the real Qwen2.5-Coder-0.5B-Instruct Q4_K_M asked to
// edit code (where prompt lookup's drafts are accepted); clear errors for what cannot work.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_util.h"
#include "gguf/gguf_test_data.h"

namespace nbits::testing {
namespace {

using nlohmann::json;

std::string stories(const std::string& rel) { return shared_path("models/stories260K/" + rel); }

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& more) {
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

TEST(CliSpeculative, LookupAndADraftModelGivePlainTokensOnStories260K) {
  NBITS_REQUIRE_BIN();
  const std::string m = stories("onnx_int4");
  NBITS_REQUIRE_SHARED(m + "/genai_config.json");
  for (const std::vector<std::string>& sampling :
       {std::vector<std::string>{"--temp", "0"}, std::vector<std::string>{"--temp", "0.8", "--seed", "5"}}) {
    const std::vector<std::string> base =
        with({"run", "-m", m, "--ids", "1,403,407", "-n", "40", "--format", "json", "-t", "2"}, sampling);
    const json plain = run_json(base);
    ASSERT_EQ(ids_of(plain).size(), 40u);
    const json lookup = run_json(with(base, {"--spec", "lookup", "--draft-max", "4"}));
    EXPECT_EQ(ids_of(lookup), ids_of(plain));
    ASSERT_TRUE(lookup.contains("speculative")) << lookup.dump();
    EXPECT_EQ(lookup["speculative"]["drafter"], "prompt-lookup");
    // The model drafting for itself: every draft is the model's own greedy token.
    const json self = run_json(with(base, {"--draft-model", m}));
    EXPECT_EQ(ids_of(self), ids_of(plain));
    ASSERT_TRUE(self.contains("speculative")) << self.dump();
    EXPECT_GT(self["speculative"]["drafted"].get<int64_t>(), 0);
    if (sampling[1] == "0") {
      EXPECT_EQ(self["speculative"]["accepted"], self["speculative"]["drafted"]);
    }
  }
}

TEST(CliSpeculative, QwenCoderEditingCodeAcceptsLookupDraftsAndGivesPlainTokens) {
  NBITS_REQUIRE_BIN();
  const std::string q = gguf::test::qwen05_gguf();
  NBITS_REQUIRE_SHARED(q);
  const std::string prompt =
      "Rename the variable `total` to `sum_of_values` in this Python function and return the whole "
      "function:\n\ndef average(values):\n    total = 0\n    count = 0\n    for v in values:\n        if v "
      "is "
      "None:\n            continue\n        total += v\n        count += 1\n    if count == 0:\n        "
      "return "
      "0.0\n    return total / count\n";
  const std::vector<std::string> base = {"run", "-m", q,          "--chat", "-p", prompt,
                                         "-n",  "64", "--format", "json",   "-t", "2"};
  const json plain = run_json(base);
  // A fixed draft length (no timing-driven adapting): the counts are the same on every machine.
  const json lookup = run_json(with(base, {"--spec", "lookup", "--draft-min", "6", "--draft-max", "6"}));
  EXPECT_EQ(ids_of(lookup), ids_of(plain));
  EXPECT_EQ(lookup.value("text", ""), plain.value("text", ""));
  ASSERT_TRUE(lookup.contains("speculative")) << lookup.dump();
  // The answer repeats the function: drafts are made and most of their tokens accepted.
  EXPECT_GT(lookup["speculative"]["accepted"].get<int64_t>(), 10) << lookup["speculative"].dump();
}

TEST(CliSpeculative, WhatCannotWorkIsRefusedClearly) {
  NBITS_REQUIRE_BIN();
  const std::string m = stories("onnx_int4");
  NBITS_REQUIRE_SHARED(m + "/genai_config.json");
  auto fails_with = [&](const std::vector<std::string>& args, const std::string& words) {
    RunResult r = run_nbits(args);
    EXPECT_NE(r.exit_code, 0) << r.out;
    EXPECT_NE(r.err.find(words), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("terminate"), std::string::npos) << r.err;
  };
  fails_with({"run", "-m", m, "--ids", "1", "--spec", "lookup", "--logprobs", "3", "--format", "json"},
             "leave out --spec");
  fails_with({"run", "-m", m, "--ids", "1", "--spec", "draft"}, "--draft-model FILE");
  fails_with({"run", "-m", m, "--ids", "1", "--spec", "lookup", "--draft-model", m}, "--spec draft");
  fails_with({"run", "-m", m, "--ids", "1", "--spec", "lookup", "--draft-max", "0"}, "--draft-max");
  fails_with({"run", "-m", m, "--ids", "1", "--spec", "sometimes"}, "--spec");
  fails_with({"run", "-m", m, "--ids", "1", "--spec", "lookup", "--draft-min", "5", "--draft-max", "4"},
             "--draft-min 5 is above --draft-max 4");
  // A draft model of another tokenizer (SmolLM2's 49152 tokens for stories260K's 512).
  const std::string smol = gguf::test::smollm2_gguf();
  NBITS_REQUIRE_SHARED(smol);
  fails_with({"run", "-m", m, "-p", "Once", "--draft-model", smol}, "draft model");
  fails_with({"bench", "-m", m, "--spec", "draft", "-t", "1"}, "--draft-model FILE");
  fails_with({"bench", "-m", m, "--draft-model", smol, "-t", "1", "-n", "4", "--reps", "1"}, "draft model");
}

// nbits bench --spec: plain and speculative decoding side by side, the ids checked equal.
TEST(CliSpeculative, BenchSpecReportsSpeedAcceptanceAndEqualIds) {
  NBITS_REQUIRE_BIN();
  const std::string m = stories("onnx_int4");
  NBITS_REQUIRE_SHARED(m + "/model.onnx");
  for (const std::vector<std::string>& spec :
       {std::vector<std::string>{"--spec", "lookup"}, std::vector<std::string>{"--draft-model", m}}) {
    std::vector<std::string> args = {"bench", "-m",     m,   "-t",       "1",   "-n",
                                     "40",    "--reps", "2", "--format", "json"};
    args.insert(args.end(), spec.begin(), spec.end());
    const RunResult r = run_nbits(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j["runs"].size(), 1u) << r.out;
    const nlohmann::json& run = j["runs"][0];
    EXPECT_TRUE(run["same_ids"].get<bool>()) << r.out;
    EXPECT_EQ(run["plain_decode_ms"].size(), 2u);
    EXPECT_GT(run["plain_decode_ms_median"].get<double>(), 0.0);
    EXPECT_GT(run["spec_decode_ms_median"].get<double>(), 0.0);
    EXPECT_GE(run["tokens_per_step"].get<double>(), 1.0);
    EXPECT_LE(run["accepted"].get<int64_t>(), run["drafted"].get<int64_t>());
    if (spec[0] == "--draft-model") {
      // The model drafting for itself: nearly every draft is its own choice (not all: the draft's
      // cache is written in other step shapes, as the adaptive length chose them from timings,
      // and a near-tie can fall the other way).
      EXPECT_GT(run["drafted"].get<int64_t>(), 0) << r.out;
      EXPECT_GE(run["acceptance"].get<double>(), 0.5) << r.out;
    }
  }
}

}  // namespace
}  // namespace nbits::testing
