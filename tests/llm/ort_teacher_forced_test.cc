// Teacher-forced agreement with ONNX Runtime on the real stories260K variants (issue 11 item 5):
// every shared variant plus block 64 / 128 and int8 with zero points (made by
// tools/quality/stories_teacher_forced.py with ../shared/tools/llama2c_to_onnx.py, which also
// writes ORT 1.32's logits). The tokens are llama2.c's 256-step greedy trace from BOS, run as one
// prefill in both runtimes (the logits of every position). Per variant: the largest per-step
// max|nbits - ORT| / max|logit|, and every step where the argmax differs, with ORT's top-2 margin
// there. Both runtimes are also compared with the fp32 model on the same tokens (ORT's fp32 logits).
//
// Measured (2026-12-01, AVX-512 VNNI Xeon): fp32 and every accuracy-level-0 variant equal ORT to
// <= 1.6e-6 of max|logit| with no argmax difference: the arithmetic is the same wherever the
// activations stay fp32. Every int8-activation variant (accuracy level 4) differs from ORT by
// 2.1e-2 .. 3.9e-2 of max|logit| at its worst step, with argmax differences at ORT margins up to
// 8.9e-3 * max|logit| (int4 b32, step 91), so the target (none above 1e-3) is NOT met,
// and cannot be by matching rules: nbits quantizes A exactly as ORT 1.32 does (docs/ort_compint8.md:
// scale, reciprocal, rounding, block length and sums bit-equal); ORT adds the zero-point term in
// float and sums in another order (a few ulps per output, less accurate than nbits' exact integer
// form), and the next layer's int8 re-quantization amplifies ulps into rounding flips. ORT against
// a copy of itself with every MatMulNBits output scaled by (1 + 2^-23) flips at the same margins
// (up to 8.9e-3 for int4, 1.2e-2 for int8). Each runtime is as far from the fp32 model as the
// other (mean per-step distance within 2%), which the test asserts (5%), with flips bounded by
// 1.5e-2 * max|logit| (above ORT's own 1-ulp noise) as a regression guard.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "llm/generator.h"
#include "support/shared_data.h"

namespace nbits::llm {
namespace {

using nlohmann::json;

std::string refs_dir() {
  if (const char* e = std::getenv("NBITS_CACHE"); e != nullptr && *e)
    return std::string(e) + "/stories-teacher-forced";
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "/root") + "/.cache/nbits/stories-teacher-forced";
}

std::vector<float> read_f32(const std::string& path, size_t n) {
  std::vector<float> v(n);
  std::ifstream f(path, std::ios::binary);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * sizeof(float)));
  EXPECT_TRUE(f.good()) << path;
  return v;
}

struct RowStats {
  double max_abs = 0, margin = 0;  // max|logit|, top-1 minus top-2
  int argmax = 0;
};

RowStats stats(std::span<const float> row) {
  RowStats s;
  int a = 0, b = -1;
  for (size_t i = 0; i < row.size(); ++i) {
    s.max_abs = std::max(s.max_abs, std::fabs(static_cast<double>(row[i])));
    if (row[i] > row[static_cast<size_t>(a)]) a = static_cast<int>(i);
  }
  for (size_t i = 0; i < row.size(); ++i)
    if (static_cast<int>(i) != a && (b < 0 || row[i] > row[static_cast<size_t>(b)])) b = static_cast<int>(i);
  s.argmax = a;
  s.margin = static_cast<double>(row[static_cast<size_t>(a)]) - row[static_cast<size_t>(b)];
  return s;
}

double rel_diff(std::span<const float> x, std::span<const float> ref, double ref_max) {
  double d = 0;
  for (size_t i = 0; i < ref.size(); ++i) d = std::max(d, std::fabs(static_cast<double>(x[i]) - ref[i]));
  return d / ref_max;
}

TEST(OrtTeacherForced, Stories260KVariantsAgreeWithOnnxRuntime) {
  const std::string index_path = refs_dir() + "/ort_logits/index.json";
  NBITS_REQUIRE_SHARED(index_path);
  const json index = json::parse(read_text_file(index_path));
  const auto tokens = index["tokens"].get<std::vector<int32_t>>();
  const size_t T = tokens.size();
  const int64_t V = index["variants"]["fp32"]["vocab"].get<int64_t>();
  const std::vector<float> fp32 = read_f32(refs_dir() + "/ort_logits/fp32.f32", T * static_cast<size_t>(V));
  std::printf(
      "| variant | worst step max|d|/max|logit| vs ORT | argmax flips (ORT margin / max|logit|) | "
      "mean distance to fp32: nbits / ORT |\n|---|---|---|---|\n");
  for (const auto& [name, v] : index["variants"].items()) {
    SCOPED_TRACE(name);
    const std::vector<float> ort =
        read_f32(refs_dir() + "/ort_logits/" + name + ".f32", T * static_cast<size_t>(V));
    const std::string dir = v.contains("shared") ? testing::shared_path(v["shared"].get<std::string>())
                                                 : v["dir"].get<std::string>();
    NBITS_REQUIRE_SHARED(dir + "/model.onnx");
    auto gen = Generator::load(dir, {}, 300);
    ASSERT_EQ(gen->vocab_size(), V);
    const std::span<const float> all = gen->append_all_logits(tokens);
    ASSERT_EQ(all.size(), T * static_cast<size_t>(V));
    // fp32 activations: ORT's arithmetic up to summation order.
    const bool exact = name == "fp32" || name.find("acc0") != std::string::npos;
    double worst = 0, to_fp32_nbits = 0, to_fp32_ort = 0;
    std::string flips;
    int hard_flips = 0;
    for (size_t t = 0; t < T; ++t) {
      const auto row = all.subspan(t * V, V);
      const auto ref = std::span<const float>(ort).subspan(t * V, V);
      const auto f = std::span<const float>(fp32).subspan(t * V, V);
      const RowStats o = stats(ref), n = stats(row), s32 = stats(f);
      worst = std::max(worst, rel_diff(row, ref, o.max_abs));
      to_fp32_nbits += rel_diff(row, f, s32.max_abs) / static_cast<double>(T);
      to_fp32_ort += rel_diff(ref, f, s32.max_abs) / static_cast<double>(T);
      if (n.argmax != o.argmax) {
        const double r = o.margin / o.max_abs;
        char buf[64];
        std::snprintf(buf, sizeof buf, "%sstep %zu: %.1e", flips.empty() ? "" : "; ", t, r);
        flips += buf;
        if (r > 1e-3) ++hard_flips;
        EXPECT_LE(r, exact ? 0.0 : 1.5e-2)
            << "step " << t << ": nbits argmax " << n.argmax << ", ORT " << o.argmax;
      }
    }
    std::printf("| %s | %.2e | %s | %.2e / %.2e |\n", name.c_str(), worst,
                flips.empty() ? "none" : flips.c_str(), to_fp32_nbits, to_fp32_ort);
    std::printf("  %s: %d argmax difference(s) where ORT's margin exceeds 1e-3 * max|logit|\n", name.c_str(),
                hard_flips);
    if (exact) {
      EXPECT_LT(worst, 1e-5);
    }
    // Where the arithmetic differs from ORT's (int8 activations), nbits is at least as close to the
    // fp32 model as ORT, up to 5% of ORT's distance (the rounding noise of one realization).
    EXPECT_LE(to_fp32_nbits, 1.05 * to_fp32_ort + 1e-6);
  }
}

}  // namespace
}  // namespace nbits::llm
