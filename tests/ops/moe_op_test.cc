// nbits.internal MixtureOfExperts (ops/moe.cc) through small written models: 3 rows routed to
// the top-2 of 4 experts (4-bit, block 32, hidden 32, inter 64) equal a float64 forward of the
// same codes at accuracy level 0, SwiGLU experts and gpt-oss's (biases, clamped SwiGLU, softmax
// after top-k); malformed nodes fail at load with one line naming the node and
// what is wrong.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "model_file.h"

namespace nbits::testing {
namespace {

using onnx::DataType;
using onnx::dim_value;
using onnx::int_attr;

struct MoeSpec {
  int64_t E = 4, k = 2, H = 32, F = 64, rows = 3;
  int64_t code_bytes_cut = 0;  // bytes taken off the gate codes
  std::string gating = "softmax";
  DataType scales_type = DataType::kFloat;
  // gpt-oss: biases on every projection, activation swiglu_oai (limit 0.5, so the clamps bite).
  bool oai = false;
  std::string activation = "";  // "" : swiglu_oai when oai, else the attribute left out
  int64_t bias_cut = 0;         // values taken off the down biases
};

// codes: [E * N][K / 2] bytes of pseudo-random nibbles; scales one per block.
std::vector<uint8_t> codes(int64_t n, uint32_t seed) {
  std::vector<uint8_t> c(static_cast<size_t>(n));
  for (auto& b : c) b = static_cast<uint8_t>((seed = seed * 1664525u + 1013904223u) >> 24);
  return c;
}
std::vector<float> scales(int64_t n, uint32_t seed) {
  std::vector<float> s = random_floats(static_cast<size_t>(n), seed);
  for (float& v : s) v = 0.01f + 0.02f * std::fabs(v);
  return s;
}

struct Built {
  onnx::ModelWriter w;
  std::vector<std::vector<uint8_t>> c;   // gate, up, down codes
  std::vector<std::vector<float>> s;     // their scales
  std::vector<std::vector<float>> bias;  // their biases (oai), [E, N]
};

Built write(const MoeSpec& p) {
  Built b{onnx::ModelWriter{}, {}, {}, {}};
  b.w.add_opset("", 21);
  b.w.add_opset("nbits.internal", 1);
  b.w.add_input("x", DataType::kFloat, {dim_value(p.rows), dim_value(p.H)});
  b.w.add_input("logits", DataType::kFloat, {dim_value(p.rows), dim_value(p.E)});
  std::vector<std::string> in = {"x", "logits"};
  const char* names[3] = {"gate", "up", "down"};
  for (int i = 0; i < 3; ++i) {
    const int64_t N = i < 2 ? p.F : p.H, K = i < 2 ? p.H : p.F;
    b.c.push_back(codes(p.E * N * K / 2 - (i == 0 ? p.code_bytes_cut : 0), 10 + i));
    b.s.push_back(scales(p.E * N * K / 32, 20 + i));
    const std::string n = names[i];
    b.w.add_initializer(n + "_codes", DataType::kUint8, {static_cast<int64_t>(b.c.back().size())},
                        b.c.back());
    if (p.scales_type == DataType::kFloat)
      b.w.add_initializer(n + "_scales", DataType::kFloat, {p.E * N * K / 32}, bytes_of(b.s.back()));
    else
      b.w.add_initializer(n + "_scales", p.scales_type, {p.E * N * K / 32},
                          std::vector<uint8_t>(static_cast<size_t>(p.E * N * K / 32 * 4), 0));  // int32
    in.insert(in.end(), {n + "_codes", n + "_scales", "", ""});
  }
  in.resize(17);
  for (int i = 0; i < 3 && p.oai; ++i) {
    const int64_t N = i < 2 ? p.F : p.H;
    b.bias.push_back(random_floats(static_cast<size_t>(p.E * N - (i == 2 ? p.bias_cut : 0)), 30 + i));
    for (float& v : b.bias.back()) v *= 0.3f;
    const std::string n = std::string(names[i]) + "_bias";
    b.w.add_initializer(n, DataType::kFloat, {static_cast<int64_t>(b.bias.back().size())},
                        bytes_of(b.bias.back()));
    in[14 + static_cast<size_t>(i)] = n;
  }
  while (in.back().empty()) in.pop_back();
  std::vector<onnx::WriterAttr> at = {int_attr("n_expert", p.E),
                                      int_attr("k", p.k),
                                      int_attr("hidden_size", p.H),
                                      int_attr("inter_size", p.F),
                                      int_attr("normalize", p.oai ? 0 : 1),
                                      onnx::string_attr("gating", p.oai ? "softmax_after_topk" : p.gating),
                                      int_attr("gate_bits", 4),
                                      int_attr("gate_block_size", 32),
                                      int_attr("up_bits", 4),
                                      int_attr("up_block_size", 32),
                                      int_attr("down_bits", 4),
                                      int_attr("down_block_size", 32)};
  const std::string act = p.activation.empty() && p.oai ? "swiglu_oai" : p.activation;
  if (!act.empty()) at.push_back(onnx::string_attr("activation", act));
  if (p.oai) at.push_back(onnx::float_attr("swiglu_limit", 0.5f));
  b.w.add_node("MixtureOfExperts", "nbits.internal", "experts", in, {"y"}, at);
  b.w.add_output("y", DataType::kFloat, {dim_value(p.rows), dim_value(p.H)});
  return b;
}

std::string load_error(const MoeSpec& p) {
  try {
    load_written(write(p).w);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

void check_forward(const MoeSpec& p) {
  Built b = write(p);
  graph::SessionOptions o;
  o.accuracy_level = 0;
  auto s = load_written(b.w, o);
  auto x = random_floats(static_cast<size_t>(p.rows * p.H), 5);
  auto logits = random_floats(static_cast<size_t>(p.rows * p.E), 6);
  for (float& v : logits) v *= 3;
  s->bind_input("x", {graph::DType::kF32, {p.rows, p.H}, x.data()});
  s->bind_input("logits", {graph::DType::kF32, {p.rows, p.E}, logits.data()});
  s->run();
  const graph::Tensor& y = s->output("y");
  // W[e][n][k] = (nibble - 8) * scale of its block.
  const auto weight = [&](int i, int64_t e, int64_t n, int64_t k) {
    const int64_t N = i < 2 ? p.F : p.H, K = i < 2 ? p.H : p.F, row = e * N + n;
    const uint8_t byte = b.c[static_cast<size_t>(i)][static_cast<size_t>(row * K / 2 + k / 2)];
    const int q = k % 2 ? byte >> 4 : byte & 15;
    return (q - 8) *
           static_cast<double>(b.s[static_cast<size_t>(i)][static_cast<size_t>(row * K / 32 + k / 32)]);
  };
  double worst = 0, scale = 0;
  for (int64_t r = 0; r < p.rows; ++r) {
    std::vector<double> pr(static_cast<size_t>(p.E));
    double mx = -1e30, sum = 0;
    for (int64_t e = 0; e < p.E; ++e) mx = std::max(mx, static_cast<double>(logits[r * p.E + e]));
    for (int64_t e = 0; e < p.E; ++e) sum += pr[e] = std::exp(logits[r * p.E + e] - mx);
    std::vector<int64_t> order(static_cast<size_t>(p.E));
    std::iota(order.begin(), order.end(), 0);
    // (std::sort with the index as tie-break: this room's counting operator new has no nothrow form,
    // which std::stable_sort's buffer uses)
    std::sort(order.begin(), order.end(),
              [&](int64_t a, int64_t c) { return pr[a] > pr[c] || (pr[a] == pr[c] && a < c); });
    const double wsum = pr[order[0]] + pr[order[1]];
    for (int64_t n = 0; n < p.H; ++n) {
      double want = 0;
      for (int64_t j = 0; j < p.k; ++j) {
        const int64_t e = order[static_cast<size_t>(j)];
        double acc = 0;
        for (int64_t f = 0; f < p.F; ++f) {
          double g = p.oai ? b.bias[0][e * p.F + f] : 0, u = p.oai ? b.bias[1][e * p.F + f] : 0;
          for (int64_t c = 0; c < p.H; ++c) {
            g += x[r * p.H + c] * weight(0, e, f, c);
            u += x[r * p.H + c] * weight(1, e, f, c);
          }
          if (p.oai) {  // min(g, 0.5) sigmoid(1.702 min(g, 0.5)) (clamp(u, +-0.5) + 1)
            const double gc = std::min(g, 0.5), uc = std::clamp(u, -0.5, 0.5);
            acc += gc / (1 + std::exp(-1.702 * gc)) * (uc + 1) * weight(2, e, n, f);
          } else {
            acc += g / (1 + std::exp(-g)) * u * weight(2, e, n, f);
          }
        }
        if (p.oai) acc += b.bias[2][e * p.H + n];
        want += pr[e] / wsum * acc;  // renormalised top-2 (oai: the softmax of the top-2)
      }
      scale = std::max(scale, std::fabs(want));
      worst = std::max(worst, std::fabs(y.as<float>()[r * p.H + n] - want));
    }
  }
  EXPECT_LT(worst, 1e-5 * scale) << "max|y| " << scale;
  EXPECT_GT(scale, 1e-3);
}

TEST(MixtureOfExperts, EqualsFloat64ForwardOfTheSameCodes) { check_forward({}); }
TEST(MixtureOfExperts, GptOssExpertsEqualFloat64Forward) { check_forward({.oai = true}); }

TEST(MixtureOfExperts, MalformedNodesRefusedWithOneLine) {
  EXPECT_EQ(load_error(MoeSpec{}), "(no error)");
  expect_error(load_error(MoeSpec{.k = 5}), {"experts", "MixtureOfExperts", "k=5", "n_expert=4"});
  expect_error(load_error(MoeSpec{.k = 0}), {"experts", "k=0"});
  expect_error(load_error(MoeSpec{.E = 0, .k = 1}), {"experts", "n_expert=0"});
  expect_error(load_error(MoeSpec{.gating = "sparsemixer"}), {"experts", "gating 'sparsemixer'", "softmax"});
  expect_error(load_error(MoeSpec{.code_bytes_cut = 16}), {"experts", "gate codes", "n_expert=4", "N=64"});
  expect_error(load_error(MoeSpec{.scales_type = DataType::kInt32}), {"experts", "expert scales"});
  EXPECT_EQ(load_error(MoeSpec{.oai = true}), "(no error)");
  expect_error(load_error(MoeSpec{.oai = true, .activation = "gelu"}),
               {"experts", "activation 'gelu'", "swiglu_oai"});
  expect_error(load_error(MoeSpec{.oai = true, .bias_cut = 3}), {"experts", "down biases", "n_expert=4"});
}

}  // namespace
}  // namespace nbits::testing
