// GroupQueryAttention: against a naive reference (rotary, head grouping,
// causal, window, softcap) and self-consistency of prefill / decode / chunked
// prefill / shared vs separate KV buffers.
#include <gtest/gtest.h>

#include <cmath>

#include "model_file.h"

namespace nbits::testing {
namespace {

using onnx::DataType;
using onnx::dim_param;
using onnx::dim_value;

constexpr int64_t kNq = 4, kNkv = 2, kH = 16, kMax = 32, kRows = 64;

struct Gqa {
  float softcap = 0;
  int64_t window = -1;
  bool interleaved = false;
};

std::vector<float> cos_cache(bool sin) {
  std::vector<float> c(kRows * kH / 2);
  for (int64_t p = 0; p < kRows; ++p)
    for (int64_t i = 0; i < kH / 2; ++i) {
      const double f = p / std::pow(10000.0, 2.0 * i / kH);
      c[p * kH / 2 + i] = static_cast<float>(sin ? std::sin(f) : std::cos(f));
    }
  return c;
}

std::unique_ptr<graph::Session> make_gqa(const Gqa& g) {
  onnx::ModelWriter w;
  w.add_opset("", 21);
  w.add_opset("com.microsoft", 1);
  w.add_input("qkv", DataType::kFloat, {dim_value(1), dim_param("S"), dim_value((kNq + 2 * kNkv) * kH)});
  w.add_input("past_k", DataType::kFloat, {dim_value(1), dim_value(kNkv), dim_param("P"), dim_value(kH)});
  w.add_input("past_v", DataType::kFloat, {dim_value(1), dim_value(kNkv), dim_param("P"), dim_value(kH)});
  w.add_input("seqlens_k", DataType::kInt32, {dim_value(1)});
  w.add_input("total", DataType::kInt32, {dim_value(1)});
  w.add_initializer("cos", DataType::kFloat, {kRows, kH / 2}, bytes_of(cos_cache(false)));
  w.add_initializer("sin", DataType::kFloat, {kRows, kH / 2}, bytes_of(cos_cache(true)));
  std::vector<onnx::WriterAttr> at = {onnx::int_attr("num_heads", kNq), onnx::int_attr("kv_num_heads", kNkv),
                                      onnx::int_attr("do_rotary", 1),
                                      onnx::int_attr("rotary_interleaved", g.interleaved ? 1 : 0)};
  if (g.softcap > 0) at.push_back(onnx::float_attr("softcap", g.softcap));
  if (g.window > 0) at.push_back(onnx::int_attr("local_window_size", g.window));
  w.add_node("GroupQueryAttention", "com.microsoft", "gqa",
             {"qkv", "", "", "past_k", "past_v", "seqlens_k", "total", "cos", "sin"},
             {"out", "present_k", "present_v"}, at);
  w.add_output("out", DataType::kFloat, {dim_value(1), dim_param("S"), dim_value(kNq * kH)});
  w.add_output("present_k", DataType::kFloat, {dim_value(1), dim_value(kNkv), dim_param("T"), dim_value(kH)});
  w.add_output("present_v", DataType::kFloat, {dim_value(1), dim_value(kNkv), dim_param("T"), dim_value(kH)});
  return load_written(w);
}

// Naive reference: all T tokens of one sequence, output [T, Nq*H].
std::vector<float> reference(const std::vector<float>& qkv, int64_t T, const Gqa& g) {
  const int64_t W = (kNq + 2 * kNkv) * kH;
  const auto c = cos_cache(false), s = cos_cache(true);
  auto rot = [&](const float* x, int64_t pos) {
    std::vector<float> y(x, x + kH);
    for (int64_t i = 0; i < kH / 2; ++i) {
      const int64_t a = g.interleaved ? 2 * i : i, b = g.interleaved ? 2 * i + 1 : i + kH / 2;
      const float cc = c[pos * kH / 2 + i], ss = s[pos * kH / 2 + i];
      y[a] = x[a] * cc - x[b] * ss;
      y[b] = x[b] * cc + x[a] * ss;
    }
    return y;
  };
  std::vector<float> out(T * kNq * kH, 0.0f);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < kNq; ++h) {
      const int64_t kvh = h / (kNq / kNkv);
      const auto q = rot(&qkv[t * W + h * kH], t);
      const int64_t lo = g.window > 0 ? std::max<int64_t>(0, t + 1 - g.window) : 0;
      std::vector<double> p;
      for (int64_t j = lo; j <= t; ++j) {
        const auto k = rot(&qkv[j * W + (kNq + kvh) * kH], j);
        double d = 0;
        for (int64_t i = 0; i < kH; ++i) d += double(q[i]) * k[i];
        d /= std::sqrt(double(kH));
        if (g.softcap > 0) d = g.softcap * std::tanh(d / g.softcap);
        p.push_back(d);
      }
      const double mx = *std::max_element(p.begin(), p.end());
      double sum = 0;
      for (double& x : p) sum += (x = std::exp(x - mx));
      for (int64_t j = lo; j <= t; ++j)
        for (int64_t i = 0; i < kH; ++i)
          out[(t * kNq + h) * kH + i] +=
              static_cast<float>(p[j - lo] / sum) * qkv[j * W + (kNq + kNkv + kvh) * kH + i];
    }
  return out;
}

// Runs tokens [t0, t0+S) of qkv with the shared cache; returns the output rows.
std::vector<float> run_chunk(graph::Session& s, std::vector<float>& kc, std::vector<float>& vc,
                             const std::vector<float>& qkv, int64_t t0, int64_t S) {
  const int64_t W = (kNq + 2 * kNkv) * kH;
  std::vector<float> x(qkv.begin() + t0 * W, qkv.begin() + (t0 + S) * W);
  int32_t seqlen = static_cast<int32_t>(t0 + S - 1), total = static_cast<int32_t>(t0 + S);
  const graph::Tensor cache_k{graph::DType::kF32, {1, kNkv, kMax, kH}, kc.data()};
  const graph::Tensor cache_v{graph::DType::kF32, {1, kNkv, kMax, kH}, vc.data()};
  s.bind_input("qkv", {graph::DType::kF32, {1, S, W}, x.data()});
  s.bind_input("past_k", cache_k);
  s.bind_input("past_v", cache_v);
  s.bind_output("present_k", cache_k);
  s.bind_output("present_v", cache_v);
  s.bind_input("seqlens_k", {graph::DType::kI32, {1}, &seqlen});
  s.bind_input("total", {graph::DType::kI32, {1}, &total});
  s.run();
  const graph::Tensor& o = s.output("out");
  return std::vector<float>(o.as<float>(), o.as<float>() + o.numel());
}

void expect_near(const std::vector<float>& a, const std::vector<float>& b, float tol, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], tol) << what << " at " << i;
}

void check_schedules(const Gqa& g) {
  const int64_t T = 12, W = (kNq + 2 * kNkv) * kH;
  const auto qkv = random_floats(T * W, 7);
  const auto want = reference(qkv, T, g);
  auto s = make_gqa(g);
  // One prefill of all T tokens.
  std::vector<float> k1(kNkv * kMax * kH, 0), v1 = k1;
  expect_near(run_chunk(*s, k1, v1, qkv, 0, T), want, 1e-5f, "prefill");
  // T single-token decode steps.
  std::vector<float> k2(kNkv * kMax * kH, 0), v2 = k2, got;
  for (int64_t t = 0; t < T; ++t) {
    auto row = run_chunk(*s, k2, v2, qkv, t, 1);
    got.insert(got.end(), row.begin(), row.end());
  }
  expect_near(got, want, 1e-5f, "decode");
  expect_near(k2, k1, 1e-6f, "key cache");
  expect_near(v2, v1, 0.0f, "value cache");
  // Chunked prefill: 5 tokens, then 7 more with past.
  std::vector<float> k3(kNkv * kMax * kH, 0), v3 = k3;
  got = run_chunk(*s, k3, v3, qkv, 0, 5);
  auto rest = run_chunk(*s, k3, v3, qkv, 5, T - 5);
  got.insert(got.end(), rest.begin(), rest.end());
  expect_near(got, want, 1e-5f, "chunked");
}

TEST(GroupQueryAttention, RotaryGroupingCausal) { check_schedules({}); }
TEST(GroupQueryAttention, Interleaved) { check_schedules({0, -1, true}); }
TEST(GroupQueryAttention, LocalWindowAndSoftcap) { check_schedules({2.0f, 4, false}); }

TEST(GroupQueryAttention, SeparatePresentBufferEqualsShared) {
  const int64_t T = 6, W = (kNq + 2 * kNkv) * kH;
  const auto qkv = random_floats(T * W, 11);
  auto s = make_gqa({});
  std::vector<float> k(kNkv * kMax * kH, 0), v = k;
  run_chunk(*s, k, v, qkv, 0, T - 1);
  const auto shared = run_chunk(*s, k, v, qkv, T - 1, 1);
  // Non-shared: past holds exactly T-1 rows, present is arena memory of T rows.
  auto s2 = make_gqa({});
  std::vector<float> pk(kNkv * (T - 1) * kH), pv(pk.size());
  for (int64_t h = 0; h < kNkv; ++h)
    for (int64_t r = 0; r < T - 1; ++r)
      for (int64_t i = 0; i < kH; ++i) {
        pk[(h * (T - 1) + r) * kH + i] = k[(h * kMax + r) * kH + i];
        pv[(h * (T - 1) + r) * kH + i] = v[(h * kMax + r) * kH + i];
      }
  std::vector<float> x(qkv.end() - W, qkv.end());
  int32_t seqlen = T - 1, total = T;
  s2->bind_input("qkv", {graph::DType::kF32, {1, 1, W}, x.data()});
  s2->bind_input("past_k", {graph::DType::kF32, {1, kNkv, T - 1, kH}, pk.data()});
  s2->bind_input("past_v", {graph::DType::kF32, {1, kNkv, T - 1, kH}, pv.data()});
  s2->bind_input("seqlens_k", {graph::DType::kI32, {1}, &seqlen});
  s2->bind_input("total", {graph::DType::kI32, {1}, &total});
  s2->run();
  const graph::Tensor& o = s2->output("out");
  expect_near(std::vector<float>(o.as<float>(), o.as<float>() + o.numel()), shared, 0.0f, "separate");
  EXPECT_EQ(s2->output("present_k").shape, (graph::Shape{1, kNkv, T, kH}));
  const graph::Tensor& pres = s2->output("present_v");
  for (int64_t h = 0; h < kNkv; ++h)
    for (int64_t i = 0; i < kH; ++i)
      EXPECT_EQ(pres.as<float>()[(h * T + T - 1) * kH + i], v[(h * kMax + T - 1) * kH + i]);
}

TEST(GroupQueryAttention, InconsistentSeqlensThrows) {
  auto s = make_gqa({});
  std::vector<float> k(kNkv * kMax * kH, 0), v = k, x((kNq + 2 * kNkv) * kH, 0.5f);
  int32_t seqlen = kMax + 3, total = kMax + 4;  // beyond the cache
  const graph::Tensor ck{graph::DType::kF32, {1, kNkv, kMax, kH}, k.data()},
      cv{graph::DType::kF32, {1, kNkv, kMax, kH}, v.data()};
  s->bind_input("qkv", {graph::DType::kF32, {1, 1, (kNq + 2 * kNkv) * kH}, x.data()});
  s->bind_input("past_k", ck);
  s->bind_input("past_v", cv);
  s->bind_output("present_k", ck);
  s->bind_output("present_v", cv);
  s->bind_input("seqlens_k", {graph::DType::kI32, {1}, &seqlen});
  s->bind_input("total", {graph::DType::kI32, {1}, &total});
  EXPECT_THROW(s->run(), Error);
}

}  // namespace
}  // namespace nbits::testing
