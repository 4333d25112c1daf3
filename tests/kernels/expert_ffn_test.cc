// Mixture-of-experts kernels: routing (kernels/expert_routing.h) against a float64 reference of
// each gating (softmax, sigmoid, softmax after top-k; renormalised or not; scaled), exact ties
// going to the lower expert index; and the routed FFN (kernels/expert_ffn.h) against float64
// dequantize-and-multiply, on shapes with K not a multiple of the block (hidden 72, inter 40),
// N not a multiple of the 16-column panel, bits 4 and 8, with and without block mins, rows 1 to
// 40, k from 1 to n_expert, CompFp32 and CompInt8, 1 and 2 threads; with int8 activations a row run
// alone gives the bits it gets inside a batch.
#include "kernels/expert_ffn.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "base/error.h"
#include "kernels/expert_routing.h"

namespace nbits::kernels {
namespace {

// float64 routing: probabilities, a stable descending order, weights.
void reference_route(const ExpertRouting& r, const std::vector<float>& logits, int64_t rows,
                     std::vector<int32_t>& ids, std::vector<double>& w) {
  const int64_t E = r.n_expert, k = r.k;
  ids.assign(static_cast<size_t>(rows * k), 0);
  w.assign(static_cast<size_t>(rows * k), 0);
  for (int64_t row = 0; row < rows; ++row) {
    std::vector<double> p(static_cast<size_t>(E));
    const float* x = logits.data() + row * E;
    double mx = -INFINITY, sum = 0;
    for (int64_t e = 0; e < E; ++e) mx = std::max(mx, static_cast<double>(x[e]));
    for (int64_t e = 0; e < E; ++e) {
      const double v = x[e];
      p[static_cast<size_t>(e)] = r.gating == ExpertGating::kSoftmax   ? std::exp(v - mx)
                                  : r.gating == ExpertGating::kSigmoid ? 1 / (1 + std::exp(-v))
                                                                       : v;
      sum += p[static_cast<size_t>(e)];
    }
    if (r.gating == ExpertGating::kSoftmax)
      for (double& v : p) v /= sum;
    std::vector<int32_t> order(static_cast<size_t>(E));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return p[static_cast<size_t>(a)] > p[static_cast<size_t>(b)];
    });
    double s = 0, mk = -INFINITY;
    for (int64_t j = 0; j < k; ++j) mk = std::max(mk, p[static_cast<size_t>(order[static_cast<size_t>(j)])]);
    std::vector<double> wk(static_cast<size_t>(k));
    for (int64_t j = 0; j < k; ++j) {
      const double v = p[static_cast<size_t>(order[static_cast<size_t>(j)])];
      wk[static_cast<size_t>(j)] = r.gating == ExpertGating::kSoftmaxAfterTopK ? std::exp(v - mk) : v;
      s += wk[static_cast<size_t>(j)];
    }
    const double norm = r.gating == ExpertGating::kSoftmaxAfterTopK ? s : 1.0;
    double total = 0;
    for (double& v : wk) total += (v /= norm);
    for (int64_t j = 0; j < k; ++j) {
      ids[static_cast<size_t>(row * k + j)] = order[static_cast<size_t>(j)];
      double v = wk[static_cast<size_t>(j)];
      if (r.normalize) v /= std::max(total, 6.103515625e-5);
      if (r.scale != 0 && r.scale != 1) v *= r.scale;
      w[static_cast<size_t>(row * k + j)] = v;
    }
  }
}

TEST(ExpertRouting, EveryGatingEqualsFloat64Reference) {
  std::mt19937 rng(7);
  std::normal_distribution<float> d(0.0f, 2.0f);
  for (ExpertGating g : {ExpertGating::kSoftmax, ExpertGating::kSigmoid, ExpertGating::kSoftmaxAfterTopK})
    for (bool normalize : {false, true})
      for (float scale : {0.0f, 2.5f})
        for (int64_t E : {1, 4, 8, 60})
          for (int64_t k : {int64_t{1}, int64_t{2}, E}) {
            if (k > E) continue;
            SCOPED_TRACE(std::string(gating_name(g)) + " normalize " + std::to_string(normalize) + " scale " +
                         std::to_string(scale) + " E " + std::to_string(E) + " k " + std::to_string(k));
            const ExpertRouting r{E, k, g, normalize, scale};
            const int64_t rows = 9;
            std::vector<float> logits(static_cast<size_t>(rows * E));
            for (float& v : logits) v = d(rng);
            std::vector<int32_t> ids(static_cast<size_t>(rows * k)), want_ids;
            std::vector<float> w(static_cast<size_t>(rows * k));
            std::vector<double> want_w;
            route_experts(r, logits.data(), rows, ids.data(), w.data());
            reference_route(r, logits, rows, want_ids, want_w);
            EXPECT_EQ(ids, want_ids);
            for (size_t i = 0; i < w.size(); ++i)
              EXPECT_NEAR(w[i], want_w[i], 2e-6 * (1 + std::fabs(want_w[i])));
          }
}

TEST(ExpertRouting, ExactTiesGoToTheLowerIndexAndTheMarginIsReported) {
  // Experts 1, 3 and 4 tie for first place, 0 and 2 below: top-2 = {1, 3}, margin 0 (3 vs 4).
  const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f, 2.0f};
  for (ExpertGating g : {ExpertGating::kSoftmax, ExpertGating::kSigmoid, ExpertGating::kSoftmaxAfterTopK}) {
    std::vector<int32_t> ids(2);
    std::vector<float> w(2);
    reset_routing_margin();
    route_experts({5, 2, g, false, 0.0f}, logits.data(), 1, ids.data(), w.data());
    EXPECT_EQ(ids, (std::vector<int32_t>{1, 3})) << gating_name(g);
    EXPECT_EQ(w[0], w[1]);
    EXPECT_EQ(routing_margin(), 0.0);
  }
  // A clear decision: (2.0 - 0.5) / 2.0 = 0.75; k = n_expert decides nothing (margin stays +inf).
  const std::vector<float> clear = {0.5f, 2.0f, -1.0f};
  std::vector<int32_t> ids(3);
  std::vector<float> w(3);
  reset_routing_margin();
  route_experts({3, 1, ExpertGating::kSoftmax, false, 0.0f}, clear.data(), 1, ids.data(), w.data());
  EXPECT_DOUBLE_EQ(routing_margin(), 0.75);
  reset_routing_margin();
  route_experts({3, 3, ExpertGating::kSoftmax, true, 0.0f}, clear.data(), 1, ids.data(), w.data());
  EXPECT_TRUE(std::isinf(routing_margin()));
  EXPECT_NEAR(w[0] + w[1] + w[2], 1.0f, 1e-6);
  ExpertGating g;
  EXPECT_TRUE(parse_gating("softmax_after_topk", g));
  EXPECT_EQ(g, ExpertGating::kSoftmaxAfterTopK);
  EXPECT_FALSE(parse_gating("sparsemixer", g));
}

// One projection of every expert: random codes, scales, optional block mins; owns its bytes.
struct Weights {
  std::vector<uint8_t> codes;
  std::vector<float> scales, mins;
  std::vector<QuantizedMatrix> w;  // one view per expert
};

Weights make_weights(int64_t E, int64_t N, int64_t K, int bits, bool mins, std::mt19937& rng) {
  Weights r;
  QuantizedMatrix q{.N = N, .K = K, .bits = bits, .block_size = 32};
  const int64_t kb = q.k_blocks();
  r.codes.resize(static_cast<size_t>(E * N * kb * q.blob_bytes()));
  for (uint8_t& c : r.codes) c = static_cast<uint8_t>(rng() & 0xff);
  std::uniform_real_distribution<float> s(0.002f, 0.03f), m(-0.05f, 0.05f);
  r.scales.resize(static_cast<size_t>(E * N * kb));
  for (float& v : r.scales) v = s(rng) / (bits == 8 ? 16.0f : 1.0f);
  if (mins) {
    r.mins.resize(r.scales.size());
    for (float& v : r.mins) v = m(rng);
  }
  for (int64_t e = 0; e < E; ++e) {
    QuantizedMatrix x = q;
    x.codes = r.codes.data() + e * N * kb * q.blob_bytes();
    x.scales = r.scales.data() + e * N * kb;
    x.mins = mins ? r.mins.data() + e * N * kb : nullptr;
    r.w.push_back(x);
  }
  return r;
}

double dequant(const QuantizedMatrix& w, int64_t n, int64_t k) {
  const int64_t b = k / w.block_size;
  return (w.code(n, k) - static_cast<double>(w.zero_point(n, b))) * w.scale(n, b) + w.block_min(n, b);
}

// oai: gpt-oss's experts (biases on gate, up and down; the clamped SwiGLU, its limit low enough
// that the clamps bite on these values; ORT's activation_beta 1, then another).
TEST(ExpertFfn, EqualsFloat64ReferenceAndRowsAreIndependent) {
  const int64_t E = 6, hidden = 72, inter = 40;
  std::mt19937 rng(11);
  for (bool oai : {false, true})
    for (int bits : {4, 8})
      for (bool mins : {false, true}) {
        ExpertActivation act;
        if (oai) {
          act.kind = ExpertActivation::Kind::kSwigluOai;
          act.limit = 0.6f;
          act.beta = bits == 4 ? 1.0f : 0.25f;
        }
        std::normal_distribution<float> bd(0.0f, 0.3f);
        std::vector<float> bias_g(static_cast<size_t>(E * inter)), bias_u(bias_g.size()),
            bias_d(static_cast<size_t>(E * hidden));
        for (auto* v : {&bias_g, &bias_u, &bias_d})
          for (float& b : *v) b = oai ? bd(rng) : 0.0f;
        Weights gate = make_weights(E, inter, hidden, bits, mins, rng),
                up = make_weights(E, inter, hidden, bits, mins, rng),
                down = make_weights(E, hidden, inter, bits, mins, rng);
        for (Compute compute : {Compute::kFp32, Compute::kInt8}) {
          std::vector<std::unique_ptr<PackedMatMul>> packed;
          std::vector<ExpertMatrices> experts;
          for (int64_t e = 0; e < E; ++e) {
            ExpertMatrices x;
            packed.push_back(make_matmul_nbits(gate.w[static_cast<size_t>(e)], compute));
            x.gate = packed.back().get();
            packed.push_back(make_matmul_nbits(up.w[static_cast<size_t>(e)], compute));
            x.up = packed.back().get();
            packed.push_back(make_matmul_nbits(down.w[static_cast<size_t>(e)], compute));
            x.down = packed.back().get();
            if (oai) {
              x.gate_bias = bias_g.data() + e * inter;
              x.up_bias = bias_u.data() + e * inter;
              x.down_bias = bias_d.data() + e * hidden;
            }
            experts.push_back(x);
          }
          const ExpertFfn ffn(experts, hidden, inter, act);
          for (int threads : {1, 2}) {
            ThreadPool pool(threads);
            for (int64_t k : {1, 2, 6})
              for (int64_t rows : {1, 2, 7, 40}) {
                SCOPED_TRACE("oai " + std::to_string(oai) + " bits " + std::to_string(bits) + " mins " +
                             std::to_string(mins) + " int8 " + std::to_string(compute == Compute::kInt8) +
                             " threads " + std::to_string(threads) + " k " + std::to_string(k) + " rows " +
                             std::to_string(rows));
                std::normal_distribution<float> d(0.0f, 1.0f);
                std::vector<float> x(static_cast<size_t>(rows * hidden)),
                    logits(static_cast<size_t>(rows * E));
                for (float& v : x) v = d(rng);
                for (float& v : logits) v = d(rng);
                std::vector<int32_t> ids(static_cast<size_t>(rows * k));
                std::vector<float> w(static_cast<size_t>(rows * k)), y(static_cast<size_t>(rows * hidden));
                route_experts({E, k, ExpertGating::kSoftmax, true, 0.0f}, logits.data(), rows, ids.data(),
                              w.data());
                ffn.run(x.data(), rows, ids.data(), w.data(), k, y.data(), pool);
                double worst = 0, scale = 0;
                for (int64_t r = 0; r < rows; ++r) {
                  std::vector<double> want(static_cast<size_t>(hidden), 0.0);
                  for (int64_t j = 0; j < k; ++j) {
                    const size_t e = static_cast<size_t>(ids[static_cast<size_t>(r * k + j)]);
                    std::vector<double> h(static_cast<size_t>(inter));
                    for (int64_t n = 0; n < inter; ++n) {
                      double g = bias_g[e * inter + static_cast<size_t>(n)],
                             u = bias_u[e * inter + static_cast<size_t>(n)];
                      for (int64_t c = 0; c < hidden; ++c) {
                        const double a = x[static_cast<size_t>(r * hidden + c)];
                        g += a * dequant(gate.w[e], n, c);
                        u += a * dequant(up.w[e], n, c);
                      }
                      if (oai) {
                        const double lim = act.limit, gc = std::min(g, lim), uc = std::clamp(u, -lim, lim);
                        h[static_cast<size_t>(n)] =
                            gc / (1 + std::exp(-double(act.alpha) * gc)) * (uc + act.beta);
                      } else {
                        h[static_cast<size_t>(n)] = g / (1 + std::exp(-g)) * u;
                      }
                    }
                    for (int64_t n = 0; n < hidden; ++n) {
                      double o = bias_d[e * hidden + static_cast<size_t>(n)];
                      for (int64_t c = 0; c < inter; ++c)
                        o += h[static_cast<size_t>(c)] * dequant(down.w[e], n, c);
                      want[static_cast<size_t>(n)] += w[static_cast<size_t>(r * k + j)] * o;
                    }
                  }
                  for (int64_t n = 0; n < hidden; ++n) {
                    scale = std::max(scale, std::fabs(want[static_cast<size_t>(n)]));
                    worst = std::max(worst, std::fabs(y[static_cast<size_t>(r * hidden + n)] -
                                                      want[static_cast<size_t>(n)]));
                  }
                  // The row alone: the same bits with int8 activations (each row quantized by itself;
                  // CompFp32's one-row kernels sum in another order than its GEMM: equal to rounding).
                  std::vector<float> alone(static_cast<size_t>(hidden));
                  ffn.run(x.data() + r * hidden, 1, ids.data() + r * k, w.data() + r * k, k, alone.data(),
                          pool);
                  if (compute == Compute::kInt8) {
                    EXPECT_EQ(std::memcmp(alone.data(), y.data() + r * hidden, alone.size() * sizeof(float)),
                              0)
                        << "row " << r;
                  } else {
                    for (int64_t n = 0; n < hidden; ++n)
                      EXPECT_NEAR(alone[static_cast<size_t>(n)], y[static_cast<size_t>(r * hidden + n)],
                                  1e-5 * (1 + std::fabs(want[static_cast<size_t>(n)])));
                  }
                }
                // fp32: rounding only; int8 activations: ~1% per product, through two products.
                EXPECT_LE(worst, (compute == Compute::kFp32 ? 1e-5 : 3e-2) * scale) << "max|y| " << scale;
              }
          }
        }
      }
}

TEST(ExpertFfn, RefusesExpertIdsOutOfRange) {
  std::mt19937 rng(3);
  Weights g = make_weights(2, 16, 32, 4, false, rng), u = make_weights(2, 16, 32, 4, false, rng),
          d = make_weights(2, 32, 16, 4, false, rng);
  std::vector<std::unique_ptr<PackedMatMul>> packed;
  std::vector<ExpertMatrices> experts(2);
  for (size_t e = 0; e < 2; ++e) {
    packed.push_back(make_matmul_nbits(g.w[e], Compute::kFp32));
    experts[e].gate = packed.back().get();
    packed.push_back(make_matmul_nbits(u.w[e], Compute::kFp32));
    experts[e].up = packed.back().get();
    packed.push_back(make_matmul_nbits(d.w[e], Compute::kFp32));
    experts[e].down = packed.back().get();
  }
  const ExpertFfn ffn(experts, 32, 16);
  ThreadPool pool(1);
  std::vector<float> x(32, 1.0f), y(32);
  const int32_t bad[1] = {2};
  const float w[1] = {1.0f};
  EXPECT_THROW(ffn.run(x.data(), 1, bad, w, 1, y.data(), pool), nbits::Error);
  EXPECT_THROW(ffn.run(x.data(), 1, bad, w, 3, y.data(), pool), nbits::Error);
}

}  // namespace
}  // namespace nbits::kernels
