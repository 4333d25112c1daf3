// com.microsoft QMoE and MoE (ops/ort_moe.cc) through one-node models: 5 rows routed to the top 2
// of 4 experts (hidden 64, inter 32) equal a float64 forward with ONNX Runtime's CPU semantics
// (fc1's gate / linear rows interleaved; swiglu with alpha, beta and limit; QMoE soft-maxes the top
// k logits, MoE all of them, renormalised only with normalize_routing_weights) at accuracy level 0:
// 4- and 8-bit codes, block-wise and row-wise scales, fp32 and fp16 scales, block-wise and
// row-wise zero points, biases, fp32 / fp16 float experts. Malformed or unsupported nodes fail at
// load with one line naming the node and the attribute or input. (The builder's gpt-oss exports
// against ONNX Runtime itself: tests/llm/builder_exports_test.cc.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "base/fp16.h"
#include "model_file.h"

namespace nbits::testing {
namespace {

using onnx::DataType;
using onnx::dim_value;
using onnx::int_attr;

struct Spec {
  bool quantized = true;
  int bits = 4;
  int64_t block = 32;  // 0: row-wise scales
  bool zero_points = false;
  bool fp16 = false;  // QMoE: fp16 scales and biases; MoE: fp16 weights
  bool bias = true;
  bool normalize = false;
  float alpha = 1.702f, beta = 1.0f, limit = 0.4f;  // limit <= 0: the attribute left out
  int64_t E = 4, k = 2, H = 64, I = 32, rows = 5;
  // malformed variants
  std::string activation = "swiglu";
  int64_t fusion = 1;
  int64_t fc2_cut = 0;  // rows taken off fc2
  bool fc3 = false, router_weights = false;
  std::string quant_type = "";
};

uint32_t next(uint32_t& s) { return (s = s * 1664525u + 1013904223u) >> 8; }

// One fc weight of E experts, [E, N, K], and what it dequantizes to.
struct Fc {
  int64_t N = 0, K = 0;
  std::vector<uint8_t> codes, zp;
  std::vector<float> scales;   // [E, N, blocks]
  std::vector<uint16_t> half;  // fp16 copies (fp16 scales, or MoE's fp16 weights)
  std::vector<float> w;        // dequantized [E, N, K] (or the float weights)
  std::vector<float> bias;     // [E, N]
};

Fc make_fc(const Spec& p, int64_t N, int64_t K, uint32_t seed) {
  Fc f;
  f.N = N, f.K = K;
  const int64_t E = p.E, bs = p.block > 0 ? p.block : K, blocks = (K + bs - 1) / bs;  // ceil: block 24 too
  f.w.resize(static_cast<size_t>(E * N * K));
  const auto round_trip = [&](float v) { return p.fp16 ? fp16_to_float(float_to_fp16(v)) : v; };
  if (!p.quantized) {
    for (float& v : f.w) v = round_trip(((next(seed) % 2001) / 1000.0f - 1.0f) * 0.3f);
    for (float v : f.w) f.half.push_back(float_to_fp16(v));
  } else {
    const int mid = 1 << (p.bits - 1), levels = 1 << p.bits;
    f.scales.resize(static_cast<size_t>(E * N * blocks));
    for (float& s : f.scales) s = round_trip(0.004f + 0.0001f * static_cast<float>(next(seed) % 100));
    for (float s : f.scales) f.half.push_back(float_to_fp16(s));
    std::vector<int> q(static_cast<size_t>(E * N * K)), z(static_cast<size_t>(E * N * blocks), mid);
    for (int& v : q) v = static_cast<int>(next(seed) % levels);
    if (p.zero_points) {
      if (p.block > 0)
        for (int& v : z) v = static_cast<int>(next(seed) % levels);
      else  // row-wise: one per row
        for (int64_t r = 0; r < E * N; ++r) z[r] = static_cast<int>(next(seed) % levels);
    }
    for (int64_t r = 0; r < E * N; ++r)
      for (int64_t c = 0; c < K; ++c) {
        const size_t i = static_cast<size_t>(r * K + c), b = static_cast<size_t>(r * blocks + c / bs);
        f.w[i] = static_cast<float>(q[i] - z[b]) * f.scales[b];
      }
    // codes: element 2j in the low nibble; rows K * bits / 8 bytes
    for (int64_t i = 0; i < E * N * K; i += p.bits == 4 ? 2 : 1)
      f.codes.push_back(static_cast<uint8_t>(p.bits == 4 ? q[i] | (q[i + 1] << 4) : q[i]));
    if (p.zero_points) {
      if (p.block > 0) {  // [E, N, ceil(blocks bits / 8)]
        for (int64_t r = 0; r < E * N; ++r)
          for (int64_t c = 0; c < blocks; c += p.bits == 4 ? 2 : 1) {
            const int lo = z[r * blocks + c], hi = p.bits == 4 && c + 1 < blocks ? z[r * blocks + c + 1] : 0;
            f.zp.push_back(static_cast<uint8_t>(p.bits == 4 ? lo | (hi << 4) : lo));
          }
      } else {  // [E, ceil(N bits / 8)], packed across rows
        for (int64_t e = 0; e < E; ++e)
          for (int64_t n = 0; n < N; n += p.bits == 4 ? 2 : 1) {
            const int lo = z[e * N + n], hi = p.bits == 4 ? z[e * N + n + 1] : 0;
            f.zp.push_back(static_cast<uint8_t>(p.bits == 4 ? lo | (hi << 4) : lo));
          }
      }
    }
  }
  f.bias.resize(static_cast<size_t>(E * N));
  for (float& v : f.bias) v = round_trip(((next(seed) % 2001) / 1000.0f - 1.0f) * 0.2f);
  return f;
}

struct Built {
  onnx::ModelWriter w;
  Fc fc1, fc2;
};

Built write(const Spec& p) {
  Built b{onnx::ModelWriter{}, make_fc(p, 2 * p.I, p.H, 7), make_fc(p, p.H, p.I, 8)};
  b.w.add_opset("", 21);
  b.w.add_opset("com.microsoft", 1);
  b.w.add_input("x", DataType::kFloat, {dim_value(p.rows), dim_value(p.H)});
  b.w.add_input("logits", DataType::kFloat, {dim_value(p.rows), dim_value(p.E)});
  const DataType half_or_float = p.fp16 ? DataType::kFloat16 : DataType::kFloat;
  const auto floats = [&](const std::vector<float>& v, const std::vector<uint16_t>& h) {
    if (!p.fp16) return bytes_of(v);
    return bytes_of(h);
  };
  const auto halves = [](const std::vector<float>& v) {
    std::vector<uint16_t> h;
    for (float f : v) h.push_back(float_to_fp16(f));
    return h;
  };
  std::vector<std::string> in = {"x", "logits"};
  for (int i = 0; i < 2; ++i) {
    Fc& f = i == 0 ? b.fc1 : b.fc2;
    const std::string n = i == 0 ? "fc1" : "fc2";
    const int64_t N = f.N - (i == 1 ? p.fc2_cut : 0);
    if (p.quantized) {
      b.w.add_initializer(
          n + "_w", DataType::kUint8, {p.E, N, f.K * p.bits / 8},
          std::vector<uint8_t>(f.codes.begin(), f.codes.begin() + p.E * N * f.K * p.bits / 8));
      const int64_t blocks = p.block > 0 ? (f.K + p.block - 1) / p.block : 1;
      b.w.add_initializer(
          n + "_s", half_or_float,
          p.block > 0 ? std::vector<int64_t>{p.E, f.N, blocks} : std::vector<int64_t>{p.E, f.N},
          floats(f.scales, f.half));
      in.insert(in.end(), {n + "_w", n + "_s"});
    } else {
      std::vector<uint8_t> data = floats(f.w, f.half);
      data.resize(static_cast<size_t>(p.E * N * f.K) * (p.fp16 ? 2 : 4));  // fc2_cut: a shape refused
      b.w.add_initializer(n + "_w", half_or_float, {p.E, N, f.K}, data);
      in.push_back(n + "_w");
    }
    if (p.bias) {
      b.w.add_initializer(n + "_b", half_or_float, {p.E, f.N}, floats(f.bias, halves(f.bias)));
      in.push_back(n + "_b");
    } else {
      in.push_back("");
    }
  }
  if (p.quantized) {
    in.resize(14);
    if (p.zero_points) {
      for (int i = 0; i < 2; ++i) {
        const Fc& f = i == 0 ? b.fc1 : b.fc2;
        const std::string n = i == 0 ? "fc1_zp" : "fc2_zp";
        b.w.add_initializer(n, DataType::kUint8, {static_cast<int64_t>(f.zp.size())}, f.zp);
        in[11 + static_cast<size_t>(i)] = n;
      }
    }
    if (p.fc3) in[8] = "fc1_w";
    if (p.router_weights) in.push_back("logits");
  } else if (p.fc3) {
    in.push_back("fc1_w");
  }
  while (in.back().empty()) in.pop_back();
  std::vector<onnx::WriterAttr> at = {int_attr("k", p.k),
                                      onnx::string_attr("activation_type", p.activation),
                                      int_attr("swiglu_fusion", p.fusion),
                                      int_attr("normalize_routing_weights", p.normalize ? 1 : 0),
                                      onnx::float_attr("activation_alpha", p.alpha),
                                      onnx::float_attr("activation_beta", p.beta)};
  if (p.limit > 0) at.push_back(onnx::float_attr("swiglu_limit", p.limit));
  if (p.quantized) {
    at.push_back(int_attr("expert_weight_bits", p.bits));
    if (p.block > 0) at.push_back(int_attr("block_size", p.block));
    if (!p.quant_type.empty()) at.push_back(onnx::string_attr("quant_type", p.quant_type));
  }
  b.w.add_node(p.quantized ? "QMoE" : "MoE", "com.microsoft", "experts", in, {"y"}, at);
  b.w.add_output("y", DataType::kFloat, {dim_value(p.rows), dim_value(p.H)});
  return b;
}

std::string load_error(const Spec& p) {
  try {
    load_written(write(p).w);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

void check_forward(const Spec& p) {
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
  const float* y = s->output("y").as<float>();
  const double lim = p.limit > 0 ? p.limit : std::numeric_limits<double>::infinity();
  double worst = 0, scale = 0;
  for (int64_t r = 0; r < p.rows; ++r) {
    const float* l = logits.data() + r * p.E;
    std::vector<int64_t> order(static_cast<size_t>(p.E));
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t c) { return l[a] > l[c]; });
    // QMoE: softmax of the top k; MoE: softmax of all, renormalised over the top k when asked.
    double mx = l[order[0]], all = 0, top = 0;
    for (int64_t e = 0; e < p.E; ++e) all += std::exp(l[e] - mx);
    for (int64_t j = 0; j < p.k; ++j) top += std::exp(l[order[static_cast<size_t>(j)]] - mx);
    const double denom = p.quantized || p.normalize ? top : all;
    for (int64_t n = 0; n < p.H; ++n) {
      double want = 0;
      for (int64_t j = 0; j < p.k; ++j) {
        const int64_t e = order[static_cast<size_t>(j)];
        double acc = p.bias ? b.fc2.bias[e * p.H + n] : 0;
        for (int64_t i = 0; i < p.I; ++i) {
          double g = p.bias ? b.fc1.bias[e * 2 * p.I + 2 * i] : 0,
                 u = p.bias ? b.fc1.bias[e * 2 * p.I + 2 * i + 1] : 0;
          for (int64_t c = 0; c < p.H; ++c) {
            g += double(x[r * p.H + c]) * b.fc1.w[static_cast<size_t>((e * 2 * p.I + 2 * i) * p.H + c)];
            u += double(x[r * p.H + c]) * b.fc1.w[static_cast<size_t>((e * 2 * p.I + 2 * i + 1) * p.H + c)];
          }
          const double gc = std::min(g, lim), uc = std::clamp(u, -lim, lim);
          const double h = gc / (1 + std::exp(-double(p.alpha) * gc)) * (uc + p.beta);
          acc += h * b.fc2.w[static_cast<size_t>((e * p.H + n) * p.I + i)];
        }
        want += std::exp(l[e] - mx) / denom * acc;
      }
      scale = std::max(scale, std::fabs(want));
      worst = std::max(worst, std::fabs(y[r * p.H + n] - want));
    }
  }
  EXPECT_LT(worst, 2e-5 * scale) << "max|y| " << scale;
  EXPECT_GT(scale, 1e-3);
}

TEST(OrtQMoE, Int4BlockwiseGptOssActivationEqualsFloat64) { check_forward({}); }
TEST(OrtQMoE, Int8BlockwiseZeroPointsEqualsFloat64) { check_forward({.bits = 8, .zero_points = true}); }
TEST(OrtQMoE, Int4BlockwiseZeroPointsFp16ScalesEqualsFloat64) {
  check_forward({.block = 16, .zero_points = true, .fp16 = true});
}
TEST(OrtQMoE, RowWiseScalesAndZeroPointsEqualFloat64) {
  check_forward({.block = 0, .zero_points = true});
  check_forward({.bits = 8, .block = 0, .zero_points = true, .bias = false});
}
TEST(OrtQMoE, PlainSwigluWithoutLimitEqualsFloat64) {
  check_forward({.bias = false, .alpha = 1.0f, .beta = 0.0f, .limit = 0.0f});
}
TEST(OrtMoE, FloatExpertsEqualFloat64) {
  check_forward({.quantized = false});
  check_forward({.quantized = false, .normalize = true, .limit = 0.0f});
  check_forward({.quantized = false, .fp16 = true, .bias = false});
}

TEST(OrtQMoE, MalformedOrUnsupportedNodesRefusedWithOneLine) {
  EXPECT_EQ(load_error(Spec{}), "(no error)");
  expect_error(load_error(Spec{.k = 5}), {"experts", "QMoE", "k=5", "n_expert=4"});
  expect_error(load_error(Spec{.activation = "relu"}), {"experts", "activation_type 'relu'", "swiglu"});
  expect_error(load_error(Spec{.fusion = 2}), {"experts", "swiglu_fusion=2"});
  expect_error(load_error(Spec{.bits = 2}), {"experts", "expert_weight_bits=2", "4 or 8"});
  expect_error(load_error(Spec{.block = 24}), {"experts", "block_size=24", "power of two"});
  expect_error(load_error(Spec{.fc2_cut = 1}), {"experts", "fc2 weights"});
  expect_error(load_error(Spec{.fc3 = true}), {"experts", "input 8", "fc3"});
  expect_error(load_error(Spec{.router_weights = true}), {"experts", "input 14", "router_weights"});
  expect_error(load_error(Spec{.quant_type = "fp4"}), {"experts", "quant_type 'fp4'"});
  expect_error(load_error(Spec{.alpha = -1.0f}), {"experts", "activation_alpha=-1"});
  EXPECT_EQ(load_error(Spec{.quantized = false}), "(no error)");
  expect_error(load_error(Spec{.quantized = false, .fc2_cut = 1}), {"experts", "MoE", "fc2 weights"});
  expect_error(load_error(Spec{.quantized = false, .fc3 = true}), {"experts", "input 6", "fc3"});
}

}  // namespace
}  // namespace nbits::testing
