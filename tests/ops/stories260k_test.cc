// End-to-end: stories260K through the Session against llama2.c's greedy trace
// (fp32) and ONNX Runtime 1.30's greedy outputs (quantized variants).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "greedy_driver.h"
#include "support/shared_data.h"

namespace nbits::testing {
namespace {

const std::string kModels = "models/stories260K/";

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f);
}

// Checks the three logits llama2.c recorded at one position; returns the relative error.
double trace_error(const nlohmann::json& c, size_t pos, const float* lg, int vocab) {
  const double ref_max = c["max_logit_per_pos"][pos], ref0 = c["logit_token0_per_pos"][pos],
               ref1 = c["logit_token1_per_pos"][pos];
  const double ours_max = *std::max_element(lg, lg + vocab);
  const double diff =
      std::max({std::abs(ours_max - ref_max), std::abs(lg[0] - ref0), std::abs(lg[1] - ref1)});
  return diff / std::max({std::abs(ref_max), std::abs(ref0), std::abs(ref1)});
}

TEST(Stories260K, Fp32GreedyMatchesLlama2c) {
  const std::string dir = shared_path(kModels + "onnx_fp32");
  NBITS_REQUIRE_SHARED(dir + "/model.onnx");
  const auto trace = read_json(shared_path(kModels + "reference/greedy_trace.json"));
  for (const auto& c : trace["cases"]) {
    SCOPED_TRACE("prompt '" + c["prompt"].get<std::string>() + "'");
    GreedyDriver d(dir);
    const std::vector<int64_t> prompt = c["prompt_ids_with_bos"];
    const std::vector<int64_t> fed = c["fed_tokens"];
    const std::vector<int64_t> argmax = c["argmax_per_pos"];
    // Prefill the whole prompt at once; every prompt position is checked.
    d.step(prompt.data(), static_cast<int64_t>(prompt.size()));
    double worst = 0;
    for (size_t p = 0; p < prompt.size(); ++p) {
      const float* lg = d.logits_row(static_cast<int64_t>(p));
      EXPECT_EQ(GreedyDriver::argmax(lg, d.vocab()), argmax[p]) << "pos " << p;
      worst = std::max(worst, trace_error(c, p, lg, d.vocab()));
    }
    size_t pos = prompt.size() - 1;
    int64_t next = GreedyDriver::argmax(d.logits_row(static_cast<int64_t>(pos)), d.vocab());
    while (next != 1 && pos + 1 < fed.size()) {  // llama2.c stops when BOS is sampled
      ++pos;
      ASSERT_EQ(next, fed[pos]) << "pos " << pos;
      const float* lg = d.step(&next, 1);
      next = GreedyDriver::argmax(lg, d.vocab());
      ASSERT_EQ(next, argmax[pos]) << "pos " << pos;
      worst = std::max(worst, trace_error(c, pos, lg, d.vocab()));
    }
    EXPECT_EQ(pos + 1, fed.size()) << "generation stopped early";
    EXPECT_LE(worst, 1e-4) << "worst relative logit error";
    std::printf("[ stories ] fp32 prompt '%s': %zu positions, worst relative logit error %.2e\n",
                c["prompt"].get<std::string>().c_str(), pos + 1, worst);
  }
}

struct Variant {
  const char* name;
  double tol;  // max |diff| / max |logit| on the first three steps
};

std::vector<int64_t> once_upon_a_time() {
  const auto trace = read_json(shared_path(kModels + "reference/greedy_trace.json"));
  return trace["cases"][1]["prompt_ids_with_bos"];
}

void check_variant(const Variant& v, const graph::SessionOptions& opt = {}) {
  const std::string dir = shared_path(kModels + "onnx_" + v.name);
  NBITS_REQUIRE_SHARED(dir + "/model.onnx");
  const auto ort = read_json(shared_path(kModels + "reference/onnx_greedy_ort.json"));
  for (const std::string prompt_text : {"", "Once upon a time"}) {
    const auto& ref = ort[std::string(v.name) + "|" + prompt_text];
    const std::vector<int64_t> ref_seq = ref["seq"];
    const std::vector<int64_t> prompt = prompt_text.empty() ? std::vector<int64_t>{1} : once_upon_a_time();
    ASSERT_TRUE(std::equal(prompt.begin(), prompt.end(), ref_seq.begin())) << "seq = prompt + generated";
    GreedyDriver d(dir, opt);
    std::vector<std::vector<float>> first;
    const std::vector<int64_t> seq = d.generate(prompt, 256, {1, 2}, &first);
    for (size_t s = 0; s < 3 && s < first.size(); ++s) {
      const std::vector<float> ref_row = ref["firstLogits"][s];
      const std::vector<float>& ours = first[s];
      double mx = 0, diff = 0;
      for (float x : ours) mx = std::max(mx, std::abs(static_cast<double>(x)));
      for (size_t i = 0; i < ref_row.size(); ++i)
        diff = std::max(diff, std::abs(double(ours[i]) - ref_row[i]));
      EXPECT_LE(diff, v.tol * mx) << v.name << " '" << prompt_text << "' step " << s;
    }
    ASSERT_GT(seq.size(), prompt.size());
    EXPECT_EQ(seq[prompt.size()], ref_seq[prompt.size()]) << "first-step argmax";
    size_t match = prompt.size();
    while (match < seq.size() && match < ref_seq.size() && seq[match] == ref_seq[match]) ++match;
    const size_t generated = match - prompt.size(), ref_generated = ref_seq.size() - prompt.size();
    std::printf(
        "[ stories ] %-15s prompt '%s': %zu of %zu generated tokens equal ORT's (ours %zu, ORT %zu long)\n",
        v.name, prompt_text.c_str(), generated, ref_generated, seq.size(), ref_seq.size());
    EXPECT_GE(generated, std::min<size_t>(32, ref_generated)) << v.name << " '" << prompt_text << "'";
  }
}

TEST(Stories260K, Int4MatchesOrt) { check_variant({"int4", 2e-2}); }
TEST(Stories260K, Int4AsymMatchesOrt) { check_variant({"int4_asym", 2e-2}); }
TEST(Stories260K, Int8MatchesOrt) { check_variant({"int8", 2e-2}); }
TEST(Stories260K, Int4Acc0MatchesOrt) { check_variant({"int4_acc0", 1e-3}); }
TEST(Stories260K, Int4AsymAcc0MatchesOrt) { check_variant({"int4_asym_acc0", 1e-3}); }
TEST(Stories260K, Int8Acc0MatchesOrt) { check_variant({"int8_acc0", 1e-3}); }
TEST(Stories260K, Int4ExtdataMatchesOrt) {
  // Same weights as int4, stored in model.onnx.data; ORT's reference is int4's.
  const std::string dir = shared_path(kModels + "onnx_int4_extdata");
  NBITS_REQUIRE_SHARED(dir + "/model.onnx");
  GreedyDriver a(dir), b(shared_path(kModels + "onnx_int4"));
  EXPECT_EQ(a.generate({1}, 256, {1, 2}), b.generate({1}, 256, {1, 2}));
}

TEST(Stories260K, AccuracyLevelOverride) {
  const std::string dir = shared_path(kModels + "onnx_int4_acc0");
  NBITS_REQUIRE_SHARED(dir + "/model.onnx");
  graph::SessionOptions opt;
  opt.accuracy_level = 4;
  GreedyDriver forced(dir, opt), int4(shared_path(kModels + "onnx_int4")), acc0(dir);
  for (const auto& info : forced.session->matmul_nbits_info()) EXPECT_EQ(info.accuracy_level, 4);
  const auto want = int4.generate({1}, 256, {1, 2});
  EXPECT_EQ(forced.generate({1}, 256, {1, 2}), want);
  EXPECT_NE(acc0.generate({1}, 256, {1, 2}), want)
      << "acc0 should differ somewhere (fp32 vs int8 activations)";
}

}  // namespace
}  // namespace nbits::testing
