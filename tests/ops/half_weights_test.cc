// fp16/bf16 MatMul weights kept in half precision (graph/rewrites.h half_matmul_weights):
// a weight read only as MatMul's B is packed into half panels, a tied embedding
// (Transpose -> Gather of the same weight) gathers widened rows, and a weight that
// any other op reads is widened to fp32 as before. Values against fp32 sums of the
// rounded weights.
#include <gtest/gtest.h>

#include <cmath>

#include "base/fp16.h"
#include "model_file.h"

namespace nbits::testing {
namespace {

using onnx::DataType;
using onnx::dim_param;
using onnx::dim_value;

constexpr int64_t K = 19, N = 37;  // odd K, N past two panels

struct Weights {
  std::vector<uint16_t> h;
  std::vector<float> f;  // the rounded values
};

Weights make_weights(bool bf16) {
  Weights w;
  for (float v : random_floats(K * N, 11)) {
    w.h.push_back(bf16 ? float_to_bf16(v) : float_to_fp16(v));
    w.f.push_back(bf16 ? bf16_to_float(w.h.back()) : fp16_to_float(w.h.back()));
  }
  return w;
}

std::string kernel_of(const graph::Session& s, const std::string& node) {
  for (const auto& e : s.profile())
    if (e.name == node) return e.kernel;
  return "?";
}

// y = x W, e = Gather(Transpose(W), ids) (tied), optionally z = W + W (another reader).
void run_case(bool bf16, bool extra_reader) {
  const Weights w = make_weights(bf16);
  const DataType dt = bf16 ? DataType::kBfloat16 : DataType::kFloat16;
  onnx::ModelWriter mw;
  mw.add_input("x", DataType::kFloat, {dim_value(3), dim_value(K)});
  mw.add_input("ids", DataType::kInt64, {dim_value(2)});
  mw.add_initializer("W", dt, {K, N}, bytes_of(w.h));
  mw.add_node("MatMul", "", "mm", {"x", "W"}, {"y"});
  mw.add_node("Transpose", "", "tr", {"W"}, {"Wt"}, {onnx::ints_attr("perm", {1, 0})});
  mw.add_node("Gather", "", "emb", {"Wt", "ids"}, {"e"});
  mw.add_output("y", DataType::kFloat, {dim_value(3), dim_value(N)});
  mw.add_output("e", DataType::kFloat, {dim_value(2), dim_value(K)});
  if (extra_reader) {
    mw.add_node("Add", "", "add", {"W", "W"}, {"z"});
    mw.add_output("z", DataType::kFloat, {dim_value(K), dim_value(N)});
  }
  graph::SessionOptions o;
  o.profile = true;
  auto s = load_written(mw, o);
  std::vector<float> x = random_floats(3 * K, 5);
  std::vector<int64_t> ids = {N - 1, 2};
  s->bind_input("x", {graph::DType::kF32, graph::Shape{3, K}, x.data()});
  s->bind_input("ids", {graph::DType::kI64, graph::Shape{2}, ids.data()});
  s->run();
  const graph::Tensor& y = s->output("y");
  ASSERT_EQ(y.dtype, graph::DType::kF32);
  for (int64_t m = 0; m < 3; ++m)
    for (int64_t n = 0; n < N; ++n) {
      float acc = 0;
      for (int64_t k = 0; k < K; ++k) acc = std::fma(x[m * K + k], w.f[k * N + n], acc);
      ASSERT_EQ(y.as<const float>()[m * N + n], acc) << m << "," << n;
    }
  const graph::Tensor& e = s->output("e");
  ASSERT_EQ(e.dtype, graph::DType::kF32);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t k = 0; k < K; ++k) ASSERT_EQ(e.as<const float>()[i * K + k], w.f[k * N + ids[i]]);
  const std::string kernel = kernel_of(*s, "mm");
  if (extra_reader) {
    // Widened to fp32 (then packed into fp32 x16 panels where the CPU has a SIMD kernel for them).
    EXPECT_EQ(kernel.rfind("sgemm_", 0), 0u) << kernel << ": a weight another op reads is widened";
    const graph::Tensor& z = s->output("z");
    for (int64_t i = 0; i < K * N; ++i) ASSERT_EQ(z.as<const float>()[i], w.f[i] + w.f[i]);
  } else {
    EXPECT_EQ(kernel.rfind("hgemm_x16", 0), 0u) << kernel;
  }
}

TEST(HalfWeights, Fp16MatMulAndTiedEmbeddingStayHalf) { run_case(false, false); }
TEST(HalfWeights, Bf16MatMulAndTiedEmbeddingStayHalf) { run_case(true, false); }
TEST(HalfWeights, WeightWithAnotherReaderIsWidened) { run_case(false, true); }

}  // namespace
}  // namespace nbits::testing
