// MatMulNBits' internal input 6 (per-block mins, GGUF Q4_1/Q4_K/Q5_K): y = dequant(W) . a with
// value = (q - zp) * scale + min, at accuracy level 0 (fp32 activations) and 4 (int8
// activations: the min term uses the block sums of the quantized activations).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "gguf/graph_builder.h"
#include "graph/session.h"
#include "quant/quantize_a.h"

namespace nbits::gguf {
namespace {

TEST(GgufMatMulMins, EqualsDequantizedWeightsTimesActivations) {
  const int64_t M = 3, K = 96, N = 20, bs = 32, kb = K / bs;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<uint8_t> codes(static_cast<size_t>(N * kb * bs / 2));
  for (auto& c : codes) c = static_cast<uint8_t>(rng() & 0xff);
  std::vector<float> scales(static_cast<size_t>(N * kb)), mins(scales.size()), a(static_cast<size_t>(M * K));
  for (auto& s : scales) s = 0.01f + 0.02f * std::fabs(u(rng));
  for (auto& m : mins) m = -8 * 0.02f * std::fabs(u(rng));
  for (auto& x : a) x = u(rng) * 3;
  auto code = [&](int64_t n, int64_t k) {
    return (codes[static_cast<size_t>((n * K + k) / 2)] >> (4 * (k % 2))) & 15;
  };

  for (int level : {0, 4}) {
    SCOPED_TRACE(level);
    onnx::Model model;
    model.opset_imports = {{"", 21}, {"com.microsoft", 1}};
    GraphBuilder g(model);
    g.input("A", onnx::DataType::kFloat, {sym("M"), fixed(K)});
    g.output("Y", onnx::DataType::kFloat, {sym("M"), fixed(N)});
    const std::string B = g.own("B", onnx::DataType::kUint8, {N, kb, bs / 2}, codes);
    const std::string S = g.own_floats("S", {N, kb}, scales);
    const std::string Z = g.own("Z", onnx::DataType::kUint8, {N, (kb * 4 + 7) / 8},
                                std::vector<uint8_t>(N * ((kb * 4 + 7) / 8), 0));
    const std::string Mi = g.own_floats("Mins", {N * kb}, mins);
    onnx::Node& n = g.node("MatMulNBits", "com.microsoft", "mm", {"A", B, S, Z, "", "", Mi});
    n.outputs[0] = "Y";
    GraphBuilder::attr(n, "K", K);
    GraphBuilder::attr(n, "N", N);
    GraphBuilder::attr(n, "bits", int64_t{4});
    GraphBuilder::attr(n, "block_size", bs);
    GraphBuilder::attr(n, "accuracy_level", static_cast<int64_t>(level));
    auto session = graph::Session::load(std::move(model));
    session->bind_input("A", graph::Tensor{graph::DType::kF32, graph::Shape{M, K}, a.data()});
    session->run();
    const float* y = session->output("Y").as<const float>();

    std::vector<int8_t> qa(static_cast<size_t>(K));
    std::vector<float> sa(static_cast<size_t>(kb)), sums(static_cast<size_t>(kb));
    double worst = 0;
    for (int64_t m = 0; m < M; ++m) {
      quant::quantize_row_blocks(a.data() + m * K, K, static_cast<int>(bs), qa.data(), sa.data(),
                                 sums.data());
      for (int64_t nn = 0; nn < N; ++nn) {
        double want = 0, mag = 0;
        for (int64_t k = 0; k < K; ++k) {
          const size_t b = static_cast<size_t>(nn * kb + k / bs);
          const double w = code(nn, k) * static_cast<double>(scales[b]) + mins[b];
          // level 4: the int8 activations the kernel multiplies; level 0: the fp32 ones.
          const double x =
              level == 4 ? qa[static_cast<size_t>(k)] * static_cast<double>(sa[static_cast<size_t>(k / bs)])
                         : a[static_cast<size_t>(m * K + k)];
          want += w * x;
          mag += std::fabs(w * x);
        }
        worst = std::max(worst, std::fabs(y[m * N + nn] - want) / mag);
      }
    }
    EXPECT_LT(worst, 1e-5);
  }
}

}  // namespace
}  // namespace nbits::gguf
