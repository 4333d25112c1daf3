// GroupQueryAttention: against a naive reference (rotary, head grouping,
// causal, window, softcap, head_sink) and self-consistency of prefill / decode / chunked
// prefill / shared vs separate KV buffers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/attention.h"
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
  std::vector<float> sinks;  // head_sink (input 11), one logit per query head; empty: none
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

std::unique_ptr<graph::Session> make_gqa(const Gqa& g, const graph::SessionOptions& o = {}) {
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
  std::vector<std::string> in = {"qkv", "", "", "past_k", "past_v", "seqlens_k", "total", "cos", "sin"};
  if (!g.sinks.empty()) {
    w.add_initializer("sink", DataType::kFloat, {kNq}, bytes_of(g.sinks));
    in.insert(in.end(), {"", "", "sink"});
  }
  w.add_node("GroupQueryAttention", "com.microsoft", "gqa", in, {"out", "present_k", "present_v"}, at);
  w.add_output("out", DataType::kFloat, {dim_value(1), dim_param("S"), dim_value(kNq * kH)});
  w.add_output("present_k", DataType::kFloat, {dim_value(1), dim_value(kNkv), dim_param("T"), dim_value(kH)});
  w.add_output("present_v", DataType::kFloat, {dim_value(1), dim_value(kNkv), dim_param("T"), dim_value(kH)});
  return load_written(w, o);
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
      // A sink adds exp(sink) to the denominator (ORT's head_sink, llama.cpp's attention sinks).
      const bool sink = !g.sinks.empty();
      const double mx =
          std::max(*std::max_element(p.begin(), p.end()), sink ? double(g.sinks[h]) : -INFINITY);
      double sum = sink ? std::exp(g.sinks[h] - mx) : 0.0;
      for (double& x : p) sum += (x = std::exp(x - mx));
      for (int64_t j = lo; j <= t; ++j)
        for (int64_t i = 0; i < kH; ++i)
          out[(t * kNq + h) * kH + i] +=
              static_cast<float>(p[j - lo] / sum) * qkv[j * W + (kNq + kNkv + kvh) * kH + i];
    }
  return out;
}

// Runs tokens [t0, t0+S) of qkv with the shared cache (fp32 rows of kH, or int8 rows of
// kv_q8_row_bytes(kH) with --kv-cache q8); returns the output rows.
template <typename T>
std::vector<float> run_chunk(graph::Session& s, std::vector<T>& kc, std::vector<T>& vc,
                             const std::vector<float>& qkv, int64_t t0, int64_t S) {
  const int64_t W = (kNq + 2 * kNkv) * kH;
  constexpr bool q8 = std::is_same_v<T, int8_t>;
  const graph::DType dt = q8 ? graph::DType::kI8 : graph::DType::kF32;
  const int64_t row = q8 ? kernels::kv_q8_row_bytes(kH) : kH;
  std::vector<float> x(qkv.begin() + t0 * W, qkv.begin() + (t0 + S) * W);
  int32_t seqlen = static_cast<int32_t>(t0 + S - 1), total = static_cast<int32_t>(t0 + S);
  const graph::Tensor cache_k{dt, {1, kNkv, kMax, row}, kc.data()};
  const graph::Tensor cache_v{dt, {1, kNkv, kMax, row}, vc.data()};
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
TEST(GroupQueryAttention, Interleaved) { check_schedules({0, -1, true, {}}); }
TEST(GroupQueryAttention, LocalWindowAndSoftcap) { check_schedules({2.0f, 4, false, {}}); }
// gpt-oss: a sink per head, from one that barely counts to one above every score, with and
// without a window.
TEST(GroupQueryAttention, HeadSinks) {
  check_schedules({0, -1, false, {-3.0f, 0.5f, 2.0f, 9.0f}});
  check_schedules({0, 4, false, {1.0f, -0.25f, 6.0f, 0.0f}});
}

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

// --kv-cache q8: the caches become int8 rows [1, Nkv, L, H + 4] (kernels/attention.h). Each row
// holds exactly kernels::quantize_kv_q8_row of the (rotated) K / V row the fp32 cache holds, written
// once (decode steps and chunks leave earlier rows as the prefill wrote them); prefill, decode and
// chunked outputs agree to the fp32 kernels' rounding (they read the same int8 rows), and follow
// the fp32 reference within the int8 bound: every stored value is within s/2 of the original
// (s = max|row| / 127 <= |row| / 127), so a score q.k / sqrt(H) moves by at most
// sum_i |q_i| s / 2 / sqrt(H) <= d = max|q| max|k| / 254 (|.|: L2 norms, kept by the rotary), each
// softmax weight by a factor within e^(+-2d), and an output by at most (e^2d - 1) max|v| + max|v| / 254.
TEST(GroupQueryAttention, Q8CacheFollowsFp32Cache) {
  const int64_t T = 12, W = (kNq + 2 * kNkv) * kH, RB = kernels::kv_q8_row_bytes(kH);
  for (const Gqa& g : {Gqa{}, Gqa{2.0f, 4, true, {}}}) {
    SCOPED_TRACE(g.window);
    const auto qkv = random_floats(T * W, 7);
    const auto want = reference(qkv, T, g);
    graph::SessionOptions o;
    o.kv_cache = graph::SessionOptions::KvCache::kQ8;
    auto s = make_gqa(g, o);
    EXPECT_EQ(s->input_dtype("past_k"), graph::DType::kI8);
    EXPECT_EQ(s->output_dtype("present_v"), graph::DType::kI8);
    auto s32 = make_gqa(g);
    std::vector<float> k32(kNkv * kMax * kH, 0), v32 = k32;
    run_chunk(*s32, k32, v32, qkv, 0, T);
    std::vector<int8_t> k1(kNkv * kMax * RB, 0), v1 = k1;
    const auto prefill = run_chunk(*s, k1, v1, qkv, 0, T);
    for (int64_t h = 0; h < kNkv; ++h)
      for (int64_t r = 0; r < kMax; ++r) {
        std::vector<int8_t> wk(RB, 0), wv(RB, 0);
        if (r < T) {
          kernels::quantize_kv_q8_row(&k32[(h * kMax + r) * kH], kH, wk.data());
          kernels::quantize_kv_q8_row(&v32[(h * kMax + r) * kH], kH, wv.data());
        }
        ASSERT_EQ(std::memcmp(wk.data(), &k1[(h * kMax + r) * RB], RB), 0) << "key row " << h << "," << r;
        ASSERT_EQ(std::memcmp(wv.data(), &v1[(h * kMax + r) * RB], RB), 0) << "value row " << h << "," << r;
      }
    std::vector<int8_t> k2(k1.size(), 0), v2 = k2;
    std::vector<float> steps;
    for (int64_t t = 0; t < T; ++t) {
      const auto row = run_chunk(*s, k2, v2, qkv, t, 1);
      steps.insert(steps.end(), row.begin(), row.end());
    }
    EXPECT_EQ(k2, k1);
    EXPECT_EQ(v2, v1);
    expect_near(steps, prefill, 1e-5f, "q8 decode vs q8 prefill");
    std::vector<int8_t> k3(k1.size(), 0), v3 = k3;
    auto chunked = run_chunk(*s, k3, v3, qkv, 0, 5);
    const auto rest = run_chunk(*s, k3, v3, qkv, 5, T - 5);
    chunked.insert(chunked.end(), rest.begin(), rest.end());
    EXPECT_EQ(k3, k1);
    expect_near(chunked, prefill, 1e-5f, "q8 chunked vs q8 prefill");
    // The bound, from the data: L2 norms of the q / k rows, max |v|.
    double qn = 0, kn = 0, vmax = 0;
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < kNq + 2 * kNkv; ++h) {
        double n2 = 0;
        for (int64_t i = 0; i < kH; ++i) n2 += double(qkv[t * W + h * kH + i]) * qkv[t * W + h * kH + i];
        if (h < kNq) qn = std::max(qn, std::sqrt(n2));
        if (h >= kNq && h < kNq + kNkv) kn = std::max(kn, std::sqrt(n2));
        if (h >= kNq + kNkv)
          for (int64_t i = 0; i < kH; ++i) vmax = std::max(vmax, double(std::fabs(qkv[t * W + h * kH + i])));
      }
    const double d = qn * kn / 254.0;  // sum_i |q_i| <= sqrt(H) |q| cancels the 1/sqrt(H) of the score
    const double bound = (std::exp(2 * d) - 1) * vmax + vmax / 254 + 1e-5;
    double worst = 0;
    for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, double(std::fabs(prefill[i] - want[i])));
    EXPECT_LE(worst, bound);
    EXPECT_GT(worst, 0.0) << "the int8 rows should round something";
    std::printf("[kv q8] GQA op, window %lld: max |q8 - reference| = %.2e (bound %.2e, max|v| %.2f)\n",
                static_cast<long long>(g.window), worst, bound, vmax);
  }
}

// q8 needs a cache GroupQueryAttention owns: a model whose present = Concat(past, new) (MHA exports,
// the plain-op general path) is refused at load with one line naming the flag; f16 there keeps the
// model's dtype as before.
TEST(GroupQueryAttention, Q8RefusedWithoutGqaCache) {
  onnx::ModelWriter w;
  w.add_opset("", 21);
  w.add_input("k", DataType::kFloat, {dim_value(1), dim_value(kNkv), dim_param("S"), dim_value(kH)});
  w.add_input("past_key.0", DataType::kFloat, {dim_value(1), dim_value(kNkv), dim_param("P"), dim_value(kH)});
  w.add_node("Concat", "", "cat", {"past_key.0", "k"}, {"present.0.key"}, {onnx::int_attr("axis", 2)});
  w.add_output("present.0.key", DataType::kFloat,
               {dim_value(1), dim_value(kNkv), dim_param("T"), dim_value(kH)});
  graph::SessionOptions o;
  o.kv_cache = graph::SessionOptions::KvCache::kQ8;
  try {
    load_written(w, o);
    ADD_FAILURE() << "q8 loaded a model without a GroupQueryAttention cache";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("--kv-cache q8"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  o.kv_cache = graph::SessionOptions::KvCache::kF16;
  EXPECT_EQ(load_written(w, o)->input_dtype("past_key.0"), graph::DType::kF32);
}

}  // namespace
}  // namespace nbits::testing
