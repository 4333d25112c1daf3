// DequantizeLinear (the general path: per tensor, per axis, block-wise; int8,
// uint8, int4, uint4) and the use_qdq fusion MatMul(A, DequantizeLinear(W))
// -> MatMulDequantized, packed like MatMulNBits, against the dequantized fp32 product.
#include <gtest/gtest.h>

#include <cmath>

#include "graph/tensor.h"
#include "model_file.h"

namespace nbits::testing {
namespace {

using graph::DType;
using graph::Shape;
using graph::Tensor;
using onnx::DataType;
using onnx::int_attr;

// 4-bit tensor bytes: element 0 in the low nibble.
std::vector<uint8_t> pack4(const std::vector<int>& v) {
  std::vector<uint8_t> b((v.size() + 1) / 2, 0);
  for (size_t i = 0; i < v.size(); ++i) b[i / 2] |= static_cast<uint8_t>((v[i] & 15) << (4 * (i % 2)));
  return b;
}

TEST(DequantizeLinear, PerTensorPerAxisAndBlockwise) {
  // x int4 [5, 3] (K=5 not a multiple of the block), block 2 along axis 0, zero points.
  const int64_t K = 5, N = 3, bs = 2, kb = 3;
  std::vector<int> q(K * N), zp(kb * N);
  std::vector<float> scale(kb * N);
  for (int64_t i = 0; i < K * N; ++i) q[i] = static_cast<int>(i * 5 % 16) - 8;
  for (int64_t i = 0; i < kb * N; ++i) zp[i] = static_cast<int>(i % 5) - 2, scale[i] = 0.25f + 0.125f * i;
  onnx::ModelWriter w;
  w.add_opset("", 21);
  w.add_initializer("q", DataType::kInt4, {K, N}, pack4(q));
  w.add_initializer("s", DataType::kFloat, {kb, N}, bytes_of(scale));
  w.add_initializer("z", DataType::kInt4, {kb, N}, pack4(zp));
  w.add_node("DequantizeLinear", "", "dq", {"q", "s", "z"}, {"y"},
             {int_attr("axis", 0), int_attr("block_size", bs)});
  // per-axis uint8 (axis 1) and per-tensor int8 on a runtime input
  w.add_input("x8", DataType::kUint8, {onnx::dim_value(2), onnx::dim_value(3)});
  w.add_initializer("s8", DataType::kFloat, {3}, bytes_of(std::vector<float>{0.5f, 2.0f, -1.0f}));
  w.add_initializer("z8", DataType::kUint8, {3}, {128, 0, 10});
  w.add_node("DequantizeLinear", "", "dq8", {"x8", "s8", "z8"}, {"y8"});
  w.add_input("xi", DataType::kInt8, {onnx::dim_value(3)});
  w.add_initializer("st", DataType::kFloat, {}, bytes_of(std::vector<float>{0.1f}));
  w.add_node("DequantizeLinear", "", "dqt", {"xi", "st"}, {"yt"});
  w.add_output("y", DataType::kFloat, {onnx::dim_value(K), onnx::dim_value(N)});
  w.add_output("y8", DataType::kFloat, {onnx::dim_value(2), onnx::dim_value(3)});
  w.add_output("yt", DataType::kFloat, {onnx::dim_value(3)});
  auto s = load_written(w);
  std::vector<uint8_t> x8 = {128, 3, 10, 0, 255, 9};
  std::vector<int8_t> xi = {-128, 0, 127};
  s->bind_input("x8", Tensor{DType::kU8, Shape{2, 3}, x8.data()});
  s->bind_input("xi", Tensor{DType::kI8, Shape{3}, xi.data()});
  s->run();
  const float* y = s->output("y").as<const float>();
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n) {
      const int64_t b = (k / bs) * N + n;
      EXPECT_EQ(y[k * N + n], static_cast<float>(q[k * N + n] - zp[b]) * scale[b]) << k << "," << n;
    }
  const float* y8 = s->output("y8").as<const float>();
  const float want8[] = {0.0f, 6.0f, 0.0f, -64.0f, 510.0f, 1.0f};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y8[i], want8[i]) << i;
  const float* yt = s->output("yt").as<const float>();
  EXPECT_FLOAT_EQ(yt[0], -12.8f);
  EXPECT_EQ(yt[1], 0.0f);
  EXPECT_FLOAT_EQ(yt[2], 12.7f);
}

// MatMul(A, DQ(W)) for signed/unsigned 4/8-bit W with and without zero points
// (K not a multiple of the block, N not of 16): fused and packed, it equals A x
// dequant(W) within the int8-activation rounding of accuracy level 4, and
// exactly the fp32 product's rounding at level 0.
TEST(DequantizeLinear, MatMulFusionMatchesDequantizedProduct) {
  const int64_t M = 3, K = 70, N = 21, bs = 32, kb = 3;
  for (DataType dt : {DataType::kInt4, DataType::kUint4, DataType::kInt8, DataType::kUint8})
    for (bool with_zp : {false, true})
      for (int level : {0, 4}) {
        const bool four = dt == DataType::kInt4 || dt == DataType::kUint4;
        const bool sgn = dt == DataType::kInt4 || dt == DataType::kInt8;
        const int lo = sgn ? (four ? -8 : -128) : 0, span = four ? 16 : 256;
        std::vector<int> q(K * N), zp(kb * N, 0);
        for (int64_t i = 0; i < K * N; ++i) q[i] = lo + static_cast<int>((i * 7919 + 13) % span);
        if (with_zp)
          for (int64_t i = 0; i < kb * N; ++i) zp[i] = lo + static_cast<int>((i * 31 + 5) % span);
        std::vector<float> scale = random_floats(kb * N, 7);
        for (float& v : scale) v = 0.01f + std::abs(v) * 0.05f;
        auto bytes = [&](const std::vector<int>& v) {
          if (four) return pack4(v);
          std::vector<uint8_t> b(v.size());
          for (size_t i = 0; i < v.size(); ++i) b[i] = static_cast<uint8_t>(v[i]);
          return b;
        };
        onnx::ModelWriter w;
        w.add_opset("", 21);
        w.add_input("a", DataType::kFloat, {onnx::dim_value(M), onnx::dim_value(K)});
        w.add_initializer("q", dt, {K, N}, bytes(q));
        w.add_initializer("s", DataType::kFloat, {kb, N}, bytes_of(scale));
        std::vector<std::string> dq_in = {"q", "s"};
        if (with_zp) {
          w.add_initializer("z", dt, {kb, N}, bytes(zp));
          dq_in.push_back("z");
        }
        w.add_node("DequantizeLinear", "", "dq", dq_in, {"wd"},
                   {int_attr("axis", 0), int_attr("block_size", bs)});
        w.add_node("MatMul", "", "mm", {"a", "wd"}, {"y"});
        w.add_output("y", DataType::kFloat, {onnx::dim_value(M), onnx::dim_value(N)});
        graph::SessionOptions o;
        o.accuracy_level = level;
        auto s = load_written(w, o);
        ASSERT_EQ(s->matmul_nbits_info().size(), 1u) << "DequantizeLinear + MatMul was not fused";
        std::vector<float> a = random_floats(M * K, 3);
        s->bind_input("a", Tensor{DType::kF32, Shape{M, K}, a.data()});
        s->run();
        const float* y = s->output("y").as<const float>();
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            double ref = 0, mag = 0;
            for (int64_t k = 0; k < K; ++k) {
              const int64_t b = (k / bs) * N + n;
              const double wv = static_cast<double>(q[k * N + n] - zp[b]) * scale[b];
              ref += a[m * K + k] * wv;
              mag += std::abs(a[m * K + k] * wv);
            }
            const double tol = (level == 4 ? 2e-2 : 1e-5) * mag + 1e-6;
            EXPECT_NEAR(y[m * N + n], ref, tol) << "dtype " << static_cast<int>(dt) << " zp " << with_zp
                                                << " level " << level << " at " << m << "," << n;
          }
      }
}

}  // namespace
}  // namespace nbits::testing
