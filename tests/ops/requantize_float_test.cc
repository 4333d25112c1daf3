// --requantize-float q8|q4 (SessionOptions::requantize_float): a constant float MatMul
// weight (fp32, fp16, bf16) is re-quantized at load into symmetric blocks of 32 along K
// and runs on the MatMulNBits kernels. Checked on random shapes (odd K, K past one block,
// N past the 16-column panel, M from 1 past the tile): at accuracy level 0 the result is
// the fp32 product of the block-dequantized weights (recomputed here), and its distance
// to the float product is the quantization's (relative Frobenius error, q8 < 1%, q4 < 15%).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "base/fp16.h"
#include "model_file.h"

namespace nbits::testing {
namespace {

using onnx::DataType;
using onnx::dim_value;

// The block-32 symmetric dequantized weights, as nbits rounds them.
std::vector<float> dequantized(const std::vector<float>& w, int64_t K, int64_t N, int bits) {
  const int qmax = bits == 8 ? 127 : 7;
  std::vector<float> out(w.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k0 = 0; k0 < K; k0 += 32) {
      const int64_t k1 = std::min<int64_t>(K, k0 + 32);
      float amax = 0;
      for (int64_t k = k0; k < k1; ++k) amax = std::max(amax, std::fabs(w[k * N + n]));
      const float scale = amax / static_cast<float>(qmax), inv = scale > 0 ? 1.0f / scale : 0.0f;
      for (int64_t k = k0; k < k1; ++k) {
        const int q = std::clamp(static_cast<int>(std::nearbyint(w[k * N + n] * inv)), -qmax, qmax);
        out[k * N + n] = static_cast<float>(q) * scale;
      }
    }
  return out;
}

struct Result {
  std::vector<float> y;
  std::string kernel;
};

// transposed: wbytes holds W stored [N, K], read as MatMul(x, Transpose(W)) (a tied lm_head).
Result run(DataType dt, const std::vector<uint8_t>& wbytes, const std::vector<float>& x, int64_t M, int64_t K,
           int64_t N, int bits, int level, bool transposed = false) {
  onnx::ModelWriter mw;
  mw.add_input("x", DataType::kFloat, {dim_value(M), dim_value(K)});
  if (transposed) {
    mw.add_initializer("E", dt, {N, K}, wbytes);
    mw.add_node("Transpose", "", "t", {"E"}, {"W"});
  } else {
    mw.add_initializer("W", dt, {K, N}, wbytes);
  }
  mw.add_node("MatMul", "", "mm", {"x", "W"}, {"y"});
  mw.add_output("y", DataType::kFloat, {dim_value(M), dim_value(N)});
  graph::SessionOptions o;
  o.requantize_float = bits;
  o.accuracy_level = level;
  o.profile = true;
  auto s = load_written(mw, o);
  s->bind_input("x", {graph::DType::kF32, graph::Shape{M, K}, const_cast<float*>(x.data())});
  s->run();
  Result r;
  const graph::Tensor& y = s->output("y");
  r.y.assign(y.as<const float>(), y.as<const float>() + y.numel());
  for (const auto& e : s->profile()) {
    if (e.name == "mm") r.kernel = e.kernel;
    if (e.name == "t") r.kernel += " (Transpose ran)";
  }
  return r;
}

TEST(RequantizeFloat, MatchesDequantizedProductOnRandomShapes) {
  struct Case {
    int64_t M, K, N;
  };
  const Case cases[] = {{1, 31, 17}, {1, 64, 16}, {3, 33, 37}, {5, 100, 70}, {9, 7, 5}, {1, 129, 200}};
  int seed = 3;
  for (const Case& c : cases)
    for (int bits : {8, 4})
      for (DataType dt : {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16}) {
        std::vector<float> w = random_floats(c.K * c.N, ++seed);
        std::vector<uint8_t> bytes;
        if (dt == DataType::kFloat) {
          bytes = bytes_of(w);
        } else {
          std::vector<uint16_t> h;
          for (float& v : w) {
            h.push_back(dt == DataType::kBfloat16 ? float_to_bf16(v) : float_to_fp16(v));
            v = dt == DataType::kBfloat16 ? bf16_to_float(h.back()) : fp16_to_float(h.back());
          }
          bytes = bytes_of(h);
        }
        const std::vector<float> x = random_floats(c.M * c.K, ++seed);
        const std::vector<float> dq = dequantized(w, c.K, c.N, bits);
        const Result r = run(dt, bytes, x, c.M, c.K, c.N, bits, 0);
        EXPECT_EQ(r.kernel.find(bits == 8 ? "q8" : "q4") != std::string::npos, true) << r.kernel;
        double err = 0, norm = 0;
        for (int64_t m = 0; m < c.M; ++m)
          for (int64_t n = 0; n < c.N; ++n) {
            double want = 0, exact = 0, mag = 0;
            for (int64_t k = 0; k < c.K; ++k) {
              want += static_cast<double>(x[m * c.K + k]) * dq[k * c.N + n];
              exact += static_cast<double>(x[m * c.K + k]) * w[k * c.N + n];
              mag += std::fabs(static_cast<double>(x[m * c.K + k]) * dq[k * c.N + n]);
            }
            const float got = r.y[static_cast<size_t>(m * c.N + n)];
            ASSERT_NEAR(got, want, 1e-5 * mag + 1e-6)
                << "bits=" << bits << " M=" << c.M << " K=" << c.K << " N=" << c.N << " at " << m << "," << n;
            err += (got - exact) * (got - exact);
            norm += exact * exact;
          }
        EXPECT_LT(std::sqrt(err / norm), bits == 8 ? 0.01 : 0.15) << "bits=" << bits << " K=" << c.K;
        // int8 activations (the default once re-quantized) stay close to the level-0 result.
        const Result r4 = run(dt, bytes, x, c.M, c.K, c.N, bits, 4);
        double d = 0, nn = 0;
        for (size_t i = 0; i < r.y.size(); ++i) {
          d += (r4.y[i] - r.y[i]) * (r4.y[i] - r.y[i]);
          nn += r.y[i] * r.y[i];
        }
        EXPECT_LT(std::sqrt(d / nn), 0.02) << r4.kernel;
      }
}

TEST(RequantizeFloat, OffKeepsTheFloatPath) {
  const std::vector<float> w = random_floats(40 * 20, 1), x = random_floats(2 * 40, 2);
  const Result r = run(DataType::kFloat, bytes_of(w), x, 2, 40, 20, 0, 0);
  EXPECT_EQ(r.kernel.rfind("sgemm", 0), 0u) << r.kernel;
  for (int64_t n = 0; n < 20; ++n) {
    float acc = 0;
    for (int64_t k = 0; k < 40; ++k) acc = std::fma(x[k], w[k * 20 + n], acc);
    EXPECT_EQ(r.y[static_cast<size_t>(n)], acc);
  }
}

// MatMul(x, Transpose(E)) with E a constant (graph/rewrites.h read_transposed_weights): the MatMul
// packs E as the [N, K] matrix it is, without a folded transposed copy, and gives bit for bit what
// the same weights stored [K, N] give, on every packed path (fp32 / fp16 / bf16 panels, q8, q4).
TEST(RequantizeFloat, TransposedConstantPacksWithoutACopy) {
  struct Case {
    int64_t M, K, N;
  };
  const Case cases[] = {{1, 31, 17}, {3, 33, 37}, {5, 100, 70}, {1, 129, 200}};
  int seed = 40;
  for (const Case& c : cases)
    for (int bits : {0, 8, 4})
      for (DataType dt : {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16}) {
        const std::vector<float> w = random_floats(c.K * c.N, ++seed);  // [K, N]
        std::vector<uint8_t> kn, nk;
        if (dt == DataType::kFloat) {
          std::vector<float> t(w.size());
          for (int64_t k = 0; k < c.K; ++k)
            for (int64_t n = 0; n < c.N; ++n) t[n * c.K + k] = w[k * c.N + n];
          kn = bytes_of(w);
          nk = bytes_of(t);
        } else {
          std::vector<uint16_t> h(w.size()), t(w.size());
          for (int64_t k = 0; k < c.K; ++k)
            for (int64_t n = 0; n < c.N; ++n) {
              const float v = w[k * c.N + n];
              h[k * c.N + n] = t[n * c.K + k] =
                  dt == DataType::kBfloat16 ? float_to_bf16(v) : float_to_fp16(v);
            }
          kn = bytes_of(h);
          nk = bytes_of(t);
        }
        const std::vector<float> x = random_floats(c.M * c.K, ++seed);
        const Result want = run(dt, kn, x, c.M, c.K, c.N, bits, 0);
        const Result got = run(dt, nk, x, c.M, c.K, c.N, bits, 0, /*transposed=*/true);
        SCOPED_TRACE(::testing::Message() << "bits=" << bits << " dtype=" << static_cast<int>(dt)
                                          << " M=" << c.M << " K=" << c.K << " N=" << c.N);
        EXPECT_EQ(got.kernel, want.kernel);  // the same packed kernel, and no Transpose node left
        EXPECT_EQ(got.y, want.y);
      }
}

}  // namespace
}  // namespace nbits::testing
