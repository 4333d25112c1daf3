// GroupQueryAttention on assorted shapes (group sizes 1, 2, 7; head sizes 64
// and 40; local window; 1 and 3 threads) against a straightforward double-
// precision attention: prompt, a chunk with past, then single-token decode.
#include <gtest/gtest.h>

#include <cmath>

#include "model_file.h"

namespace nbits::testing {
namespace {

using onnx::DataType;
using onnx::dim_param;
using onnx::dim_value;

struct Shape {
  int64_t nq, nkv, h, window;
  int threads;
  int64_t T = 45;  // tokens: a prompt of T - 15, a chunk of 12 with past, 3 decode steps
};

std::unique_ptr<graph::Session> make(const Shape& g) {
  onnx::ModelWriter w;
  w.add_opset("", 21);
  w.add_opset("com.microsoft", 1);
  const int64_t W = (g.nq + 2 * g.nkv) * g.h;
  w.add_input("qkv", DataType::kFloat, {dim_value(1), dim_param("S"), dim_value(W)});
  w.add_input("past_k", DataType::kFloat, {dim_value(1), dim_value(g.nkv), dim_param("P"), dim_value(g.h)});
  w.add_input("past_v", DataType::kFloat, {dim_value(1), dim_value(g.nkv), dim_param("P"), dim_value(g.h)});
  w.add_input("seqlens_k", DataType::kInt32, {dim_value(1)});
  w.add_input("total", DataType::kInt32, {dim_value(1)});
  std::vector<onnx::WriterAttr> at = {onnx::int_attr("num_heads", g.nq),
                                      onnx::int_attr("kv_num_heads", g.nkv)};
  if (g.window > 0) at.push_back(onnx::int_attr("local_window_size", g.window));
  w.add_node("GroupQueryAttention", "com.microsoft", "gqa",
             {"qkv", "", "", "past_k", "past_v", "seqlens_k", "total"}, {"out", "present_k", "present_v"},
             at);
  w.add_output("out", DataType::kFloat, {dim_value(1), dim_param("S"), dim_value(g.nq * g.h)});
  w.add_output("present_k", DataType::kFloat,
               {dim_value(1), dim_value(g.nkv), dim_param("T"), dim_value(g.h)});
  w.add_output("present_v", DataType::kFloat,
               {dim_value(1), dim_value(g.nkv), dim_param("T"), dim_value(g.h)});
  graph::SessionOptions o;
  o.threads = g.threads;
  return load_written(w, o);
}

// Output row (H values) of token t, head h: causal (and windowed) softmax(q.k / sqrt(H)) v in double.
std::vector<double> ref(const Shape& g, const std::vector<float>& qkv, int64_t t, int64_t h) {
  const int64_t W = (g.nq + 2 * g.nkv) * g.h, kvh = h / (g.nq / g.nkv);
  const int64_t lo = g.window > 0 ? std::max<int64_t>(0, t + 1 - g.window) : 0;
  std::vector<double> p;
  double mx = -INFINITY, z = 0;
  std::vector<double> y(g.h, 0.0);
  for (int64_t j = lo; j <= t; ++j) {
    double d = 0;
    for (int64_t c = 0; c < g.h; ++c)
      d += double(qkv[t * W + h * g.h + c]) * qkv[j * W + (g.nq + kvh) * g.h + c];
    p.push_back(d / std::sqrt(double(g.h)));
    mx = std::max(mx, p.back());
  }
  for (double& v : p) z += (v = std::exp(v - mx));
  for (int64_t j = lo; j <= t; ++j)
    for (int64_t i = 0; i < g.h; ++i) y[i] += p[j - lo] / z * qkv[j * W + (g.nq + g.nkv + kvh) * g.h + i];
  return y;
}

void check(const Shape& g) {
  SCOPED_TRACE(::testing::Message() << "nq " << g.nq << " nkv " << g.nkv << " H " << g.h << " window "
                                    << g.window << " threads " << g.threads);
  const int64_t W = (g.nq + 2 * g.nkv) * g.h, T = g.T, kCap = T + 3;  // cache rows
  const auto qkv = random_floats(T * W, static_cast<uint32_t>(g.nq * 131 + g.h));
  auto s = make(g);
  std::vector<float> kc(g.nkv * kCap * g.h, 0.0f), vc(kc.size(), 0.0f);
  const graph::Tensor ck{graph::DType::kF32, {1, g.nkv, kCap, g.h}, kc.data()};
  const graph::Tensor cv{graph::DType::kF32, {1, g.nkv, kCap, g.h}, vc.data()};
  // Prompt of T - 15 tokens, a chunk of 12 with past, then 3 decode steps (long enough to use threads).
  for (auto [t0, S] :
       {std::pair<int64_t, int64_t>{0, T - 15}, {T - 15, 12}, {T - 3, 1}, {T - 2, 1}, {T - 1, 1}}) {
    std::vector<float> x(qkv.begin() + t0 * W, qkv.begin() + (t0 + S) * W);
    int32_t seqlen = static_cast<int32_t>(t0 + S - 1), total = static_cast<int32_t>(t0 + S);
    s->bind_input("qkv", {graph::DType::kF32, {1, S, W}, x.data()});
    s->bind_input("past_k", ck);
    s->bind_input("past_v", cv);
    s->bind_output("present_k", ck);
    s->bind_output("present_v", cv);
    s->bind_input("seqlens_k", {graph::DType::kI32, {1}, &seqlen});
    s->bind_input("total", {graph::DType::kI32, {1}, &total});
    s->run();
    const float* o = s->output("out").as<float>();
    for (int64_t r = 0; r < S; ++r)
      for (int64_t h = 0; h < g.nq; ++h) {
        const auto want = ref(g, qkv, t0 + r, h);
        for (int64_t i = 0; i < g.h; ++i)
          ASSERT_NEAR(o[(r * g.nq + h) * g.h + i], want[i], 2e-6)
              << "token " << t0 + r << " head " << h << " element " << i;
      }
  }
}

TEST(GqaShapes, GroupSizes) {
  for (int threads : {1, 3, 8}) {     // 3 and 8 threads split decode groups into head chunks
    check({2, 2, 64, -1, threads});   // group of 1
    check({4, 2, 40, -1, threads});   // group of 2, odd head size
    check({14, 2, 64, -1, threads});  // Qwen2.5-0.5B grouping: 7
    check({7, 1, 40, -1, threads});
  }
}

// Past 512 keys, with more threads than kv heads, decode splits each kv head's keys across threads
// and merges the partial softmaxes; the prompt and chunk run the tile kernel over many tiles.
TEST(GqaShapes, LongContextDecodeSplit) {
  check({14, 2, 64, -1, 3, 600});
  check({14, 2, 64, 100, 8, 600});  // window: parts of the window only
  check({7, 1, 40, -1, 8, 1100});   // 4 parts
}

TEST(GqaShapes, LocalWindow) {
  check({14, 2, 64, 5, 1});
  check({4, 2, 40, 16, 3});
}

}  // namespace
}  // namespace nbits::testing
