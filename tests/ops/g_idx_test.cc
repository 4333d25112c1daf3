// MatMulNBits with g_idx (GPTQ act-order): element k of a row belongs to block g_idx[k].
// Against the dequantization formula of ../shared/docs/onnx-genai-spec.md 1.3 with
// g_idx, in double: 4- and 8-bit, with and without zero points, K a multiple of the
// block or not, M = 1 and 5, at accuracy_level 0 and 4 (g_idx computes in fp32 like
// ONNX Runtime). A trivial g_idx gives exactly the result without it; a g_idx that is
// not a permutation of the blocks, or out of range, is refused in one line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "model_file.h"

namespace nbits::testing {
namespace {

using onnx::DataType;
using onnx::dim_value;
using onnx::int_attr;

struct Weights {
  int64_t K, N, bits, bs, kb;
  std::vector<uint8_t> B, zp;
  std::vector<float> scales;
  std::vector<int32_t> g_idx;
  int code(int64_t n, int64_t k) const {
    const int64_t blob = bs * bits / 8, j = k % bs;
    const uint8_t* p = B.data() + (n * kb + k / bs) * blob;
    return bits == 8 ? p[j] : (p[j / 2] >> ((j & 1) * 4)) & 0xf;
  }
  double zero_point(int64_t n, int64_t g) const {
    if (zp.empty()) return 1 << (bits - 1);
    const int64_t row = (kb * bits + 7) / 8;
    const uint8_t v = zp[n * row + (bits == 8 ? g : g / 2)];
    return bits == 8 ? v : (v >> ((g & 1) * 4)) & 0xf;
  }
};

Weights make(int64_t K, int64_t N, int64_t bits, bool with_zp, bool shuffle, uint32_t seed) {
  std::mt19937 rng(seed);
  Weights w{K, N, bits, 32, (K + 31) / 32, {}, {}, {}, {}};
  w.B.resize(static_cast<size_t>(N * w.kb * w.bs * bits / 8));
  for (auto& b : w.B) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> sd(-0.05f, 0.05f);
  for (int64_t i = 0; i < N * w.kb; ++i) w.scales.push_back(sd(rng));
  if (with_zp) {
    w.zp.resize(static_cast<size_t>(N * ((w.kb * bits + 7) / 8)));
    for (auto& z : w.zp) z = static_cast<uint8_t>(rng());
  }
  for (int64_t k = 0; k < K; ++k) w.g_idx.push_back(static_cast<int32_t>(k / 32));
  if (shuffle) std::shuffle(w.g_idx.begin(), w.g_idx.end(), rng);  // same block sizes, any order
  return w;
}

std::unique_ptr<graph::Session> load(const Weights& w, bool g_idx, int level,
                                     const graph::SessionOptions& o = {}) {
  onnx::ModelWriter mw;
  mw.add_input("a", DataType::kFloat, {onnx::dim_param("M"), dim_value(w.K)});
  mw.add_output("y", DataType::kFloat, {onnx::dim_param("M"), dim_value(w.N)});
  mw.add_initializer("B", DataType::kUint8, {w.N, w.kb, w.bs * w.bits / 8}, w.B);
  mw.add_initializer("S", DataType::kFloat, {w.N * w.kb}, bytes_of(w.scales));
  std::vector<std::string> ins = {"a", "B", "S", w.zp.empty() ? "" : "Z"};
  if (!w.zp.empty()) mw.add_initializer("Z", DataType::kUint8, {static_cast<int64_t>(w.zp.size())}, w.zp);
  if (g_idx) {
    mw.add_initializer("G", DataType::kInt32, {w.K}, bytes_of(w.g_idx));
    ins.push_back("G");
  }
  mw.add_node("MatMulNBits", "com.microsoft", "mm", ins, {"y"},
              {int_attr("K", w.K), int_attr("N", w.N), int_attr("bits", w.bits), int_attr("block_size", w.bs),
               int_attr("accuracy_level", level)});
  return load_written(mw, o);
}

std::vector<float> run(graph::Session& s, std::vector<float>& a, int64_t M, int64_t K) {
  s.bind_input("a", {graph::DType::kF32, graph::Shape{M, K}, a.data()});
  s.run();
  const graph::Tensor& y = s.output("y");
  return std::vector<float>(y.as<const float>(), y.as<const float>() + y.numel());
}

TEST(MatMulNBitsGIdx, MatchesTheFormulaWithGIdx) {
  for (int64_t bits : {4, 8})
    for (bool with_zp : {false, true})
      for (int64_t K : {96, 80})
        for (int level : {0, 4}) {
          SCOPED_TRACE(::testing::Message()
                       << "bits " << bits << " zp " << with_zp << " K " << K << " level " << level);
          const int64_t N = 37, M = 5;
          const Weights w = make(K, N, bits, with_zp, true, static_cast<uint32_t>(K * 7 + bits));
          auto s = load(w, true, level);
          std::vector<float> a = random_floats(static_cast<size_t>(M * K), 3);
          const std::vector<float> y = run(*s, a, M, K);
          for (int64_t m = 0; m < M; ++m)
            for (int64_t n = 0; n < N; ++n) {
              double want = 0, mag = 0;
              for (int64_t k = 0; k < K; ++k) {
                const int64_t g = w.g_idx[k];
                const double wv = (w.code(n, k) - w.zero_point(n, g)) * w.scales[n * w.kb + g];
                want += a[m * K + k] * wv;
                mag += std::fabs(a[m * K + k] * wv);
              }
              ASSERT_NEAR(y[m * N + n], want, 1e-5 * mag + 1e-7) << m << "," << n;
            }
        }
}

TEST(MatMulNBitsGIdx, TrivialGIdxIsIgnored) {
  const Weights w = make(80, 21, 4, true, false, 5);
  std::vector<float> a = random_floats(3 * 80, 9);
  for (int level : {0, 4}) {
    auto with = load(w, true, level), without = load(w, false, level);
    EXPECT_EQ(run(*with, a, 3, 80), run(*without, a, 3, 80)) << "level " << level;
  }
}

TEST(MatMulNBitsGIdx, BadGIdxRefusedInOneLine) {
  Weights w = make(64, 8, 4, false, true, 2);
  w.g_idx[3] = 5;  // k_blocks is 2
  try {
    load(w, true, 0);
    FAIL() << "accepted";
  } catch (const Error& e) {
    expect_error(e.what(), {"mm", "g_idx[3]=5", "k_blocks=2"});
  }
  w = make(64, 8, 4, false, false, 2);
  w.g_idx[0] = 1;  // block 1 gets 33 elements
  try {
    load(w, true, 0);
    FAIL() << "accepted";
  } catch (const Error& e) {
    expect_error(e.what(), {"mm", "g_idx puts", "block 0", "permutation"});
  }
}

}  // namespace
}  // namespace nbits::testing
