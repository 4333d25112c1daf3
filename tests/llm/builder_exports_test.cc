// Every onnxruntime-genai builder export in tools/builder_models/cases.txt
// (made by tools/builder_models/make.py with the real builder, cached outside
// git) against ONNX Runtime's greedy run of the same file (ref.json):
//  * first-step logits: max |nbits - ORT| / max |ORT| within the precision's tolerance;
//  * greedy ids equal to ORT's until the first near-tie (ORT's top-1/top-2 margin
//    below 1e-3 x max|logit| at the step where they differ), at least 32 of 40;
//  * real weights with int8 activations (CompInt8): see compint8_real below.
// The cache is $NBITS_BUILDER_MODELS (default ~/.cache/nbits/builder-models);
// missing data fails in CI (CI=true) and skips elsewhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "llm/generator.h"
#include "support/shared_data.h"
#include "support/source_dir.h"

namespace nbits::llm {
namespace {

struct Case {
  std::string name, family, precision;
  int accuracy_level = 4;  // the builder's default for int4/int8 CPU exports
};

// Families made from real trained weights (tools/builder_models/make.py REAL).
bool real_weights(const Case& c) { return c.family == "smollm2"; }

std::vector<Case> load_cases() {
  std::vector<Case> cases;
  std::ifstream f(std::string(nbits::testing::source_dir()) + "/tools/builder_models/cases.txt");
  std::string line;
  while (std::getline(f, line)) {
    line = line.substr(0, line.find('#'));
    std::istringstream in(line);
    Case c;
    if (!(in >> c.name >> c.family >> c.precision)) continue;
    for (std::string opt; in >> opt;)
      if (opt.rfind("accuracy_level=", 0) == 0) c.accuracy_level = std::stoi(opt.substr(15));
    cases.push_back(c);
  }
  return cases;
}

std::string models_dir() {
  if (const char* e = std::getenv("NBITS_BUILDER_MODELS"); e != nullptr && *e) return e;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "/root") + "/.cache/nbits/builder-models";
}

// Relative first-step tolerance: fp32 graphs differ from ORT only in summation
// order; fp16/bf16 exports are computed in fp32 here while ORT rounds some
// intermediates to the storage type; int4/int8 (CompInt8 or CompFp32) match
// ORT's arithmetic up to accumulation order.
double tolerance(const std::string& precision) {
  if (precision == "fp32") return 1e-4;
  if (precision == "fp16") return 2e-2;
  if (precision == "bf16") return 1e-1;
  return 2e-3;
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class BuilderExport : public ::testing::TestWithParam<Case> {};

TEST_P(BuilderExport, MatchesOnnxRuntime) {
  const Case& c = GetParam();
  const std::string dir = models_dir() + "/" + c.name;
  const std::string ref_path = dir + "/ref.json";
  NBITS_REQUIRE_SHARED(ref_path);
  nlohmann::json ref = nlohmann::json::parse(std::ifstream(ref_path));
  if (ref.contains("no_reference")) {
    // ORT cannot run it (bf16 on CPU): compare with ORT on the fp32 export of the same weights.
    const std::string twin = models_dir() + "/" + c.family + "_fp32/ref.json";
    NBITS_REQUIRE_SHARED(twin);
    nlohmann::json tref = nlohmann::json::parse(std::ifstream(twin));
    const auto first = tref["first_logits"].get<std::vector<double>>();
    auto gen = Generator::load(dir);
    auto logits = gen->append(tref["prompt"].get<std::vector<int32_t>>());
    ASSERT_EQ(logits.size(), first.size());
    double diff = 0, mx = 0;
    for (size_t i = 0; i < first.size(); ++i) {
      ASSERT_TRUE(std::isfinite(logits[i]));
      diff = std::max(diff, std::abs(static_cast<double>(logits[i]) - first[i]));
      mx = std::max(mx, std::abs(first[i]));
    }
    EXPECT_LE(diff / mx, tolerance(c.precision))
        << c.name << ": first-step logits far from the fp32 export's";
    std::printf("[builder] %-20s %-5s vs ORT on %s_fp32 (ORT cannot run it: %s): max|d|/max|logit| = %.2e\n",
                c.name.c_str(), c.precision.c_str(), c.family.c_str(),
                ref["no_reference"].get<std::string>().c_str(), diff / mx);
    return;
  }
  const auto prompt = ref["prompt"].get<std::vector<int32_t>>();
  const auto want = ref["ids"].get<std::vector<int32_t>>();
  const auto margins = ref["margins"].get<std::vector<double>>();
  const auto maxabs = ref["max_abs_logit"].get<std::vector<double>>();
  const auto first = ref["first_logits"].get<std::vector<double>>();

  auto gen = Generator::load(dir, {}, 128);
  // Every layout takes the fast attention path: MultiHeadAttention exports are
  // fused at load into GroupQueryAttention writing one shared KV buffer in place.
  const std::string attention =
      gen->session().output_producer(format_layer_name(gen->config().present_key_pattern, 0));
  EXPECT_EQ(attention, "GroupQueryAttention") << c.name << ": present.0.key comes from " << attention;
  // An fp16 export keeps its KV cache in fp16 (half the bytes); others in fp32.
  const graph::DType kv = gen->session().input_dtype(format_layer_name(gen->config().past_key_pattern, 0));
  EXPECT_EQ(kv, c.precision == "fp16" ? graph::DType::kF16 : graph::DType::kF32) << c.name;
  auto logits = gen->append(prompt);
  ASSERT_EQ(logits.size(), first.size());
  double diff = 0, mx = 0;
  for (size_t i = 0; i < first.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(logits[i]) - first[i]));
    mx = std::max(mx, std::abs(first[i]));
  }
  const double rel = diff / mx;
  // Real weights through int8 activations (CompInt8): both runtimes round the activations of
  // real (outlier-heavy) hidden states to int8, and the two roundings differ by a few percent of
  // max|logit| (random small weights agree to ~1e-7). There the claim is accuracy instead:
  // nbits is at least as close as ORT to the exact dequantized product (nbits at
  // accuracy_level 0, which equals ORT's accuracy_level 0 to ~1e-6), and greedy may part from
  // ORT only where ORT's margin is within that measured rounding noise.
  // Random weights where ORT's CompInt8 arithmetic is not the one nbits mirrors: MLAS picks its
  // int8 kernel by CPU. On an AVX2-only Zen3 ORT's llama_int4_b128 (K = 64 inside one block of
  // 128) lands 1.35e-2 of max|logit| from nbits', whose CompInt8 kernels are bit-exact against
  // one scalar reference on every ISA and agree with ORT's AVX-512 VNNI path to ~1e-7. There the
  // two are different roundings of the same 64-wide activations, 2-3e-2 of max|logit| from the
  // exact product each, and which one lands closer is chance: nbits must stay within twice ORT's
  // distance (real weights: 1.1x, over many more elements).
  const bool compint8 = (c.precision == "int4" || c.precision == "int8") && c.accuracy_level == 4;
  const bool ort_differs = compint8 && !real_weights(c) && rel > tolerance(c.precision);
  const bool compint8_real = compint8 && (real_weights(c) || ort_differs);
  if (ort_differs)
    std::printf(
        "[builder] %-20s ORT's CompInt8 is %.2e of max|logit| from nbits' here: checking accuracy instead\n",
        c.name.c_str(), rel);
  double tie = 1e-3;  // near-tie threshold, relative to max|logit|
  if (compint8_real) {
    graph::SessionOptions exact_opt;
    exact_opt.accuracy_level = 0;
    auto exact = Generator::load(dir, exact_opt, 128);
    const auto e = exact->append(prompt);
    double d_nbits = 0, d_ort = 0;
    for (size_t i = 0; i < first.size(); ++i) {
      d_nbits = std::max(d_nbits, std::abs(static_cast<double>(logits[i]) - e[i]));
      d_ort = std::max(d_ort, std::abs(first[i] - e[i]));
    }
    std::printf(
        "[builder] %-20s CompInt8 vs the exact dequantized product: nbits %.2e, ORT %.2e of max|logit|\n",
        c.name.c_str(), d_nbits / mx, d_ort / mx);
    EXPECT_LE(d_nbits, (ort_differs ? 2.0 : 1.1) * d_ort)
        << c.name << ": nbits' int8 activations are less accurate than ORT's";
    EXPECT_LE(rel, 0.1) << c.name << ": first-step logits far from ORT's";
    tie = 2 * rel;
  } else {
    EXPECT_LE(rel, tolerance(c.precision)) << c.name << ": first-step logits differ from ORT";
  }

  size_t matched = 0;
  bool near_tie = false;
  for (size_t step = 0; step < want.size(); ++step) {
    const int32_t got = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    if (got != want[step]) {
      near_tie = margins[step] < tie * maxabs[step];
      EXPECT_TRUE(near_tie) << c.name << ": greedy step " << step << " gives " << got << ", ORT "
                            << want[step] << " with margin " << margins[step] << " (max|logit| "
                            << maxabs[step] << ")";
      break;
    }
    ++matched;
    if (step + 1 < want.size()) {
      const int32_t next[] = {got};
      logits = gen->append(next);
    }
  }
  if (near_tie && !compint8_real) {
    EXPECT_GE(matched, 32u) << c.name << ": near-tie before 32 tokens";
  }
  std::printf(
      "[builder] %-20s %-5s builder %s: first-step max|d|/max|logit| = %.2e; greedy %zu/%zu equal%s; %s\n",
      c.name.c_str(), c.precision.c_str(), ref["builder"].get<std::string>().c_str(), rel, matched,
      want.size(), near_tie ? " (then a near-tie)" : "", attention.c_str());
}

INSTANTIATE_TEST_SUITE_P(Cases, BuilderExport, ::testing::ValuesIn(load_cases()),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           std::string n = i.param.name;  // gtest names: alphanumerics and '_'
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace nbits::llm
