// vector_ops against double-precision references, with error bounds from the
// fp32 summation length (n u sum|terms|), and exact argmax semantics.
#include "kernels/vector_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace nbits::kernels {
namespace {

constexpr double kU = 1.0 / 16777216.0;

std::vector<float> rand_vec(int64_t n, std::mt19937& rng, float lo = -2.0f, float hi = 2.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(VectorOps, DotAxpyRmsNorm) {
  std::printf("vector_ops isa: %s\n", vector_ops_isa());
  std::mt19937 rng(5);
  for (int64_t n : {0, 1, 7, 8, 31, 33, 896, 1001}) {
    const auto a = rand_vec(n, rng), b = rand_vec(n, rng);
    double want = 0, mag = 0;
    for (int64_t i = 0; i < n; ++i) want += double(a[i]) * b[i], mag += std::fabs(double(a[i]) * b[i]);
    EXPECT_NEAR(vec_dot(a.data(), b.data(), n), want, 2 * (n + 1) * kU * mag + 1e-30) << n;

    auto y = b;
    vec_axpy(0.75f, a.data(), y.data(), n);
    for (int64_t i = 0; i < n; ++i)
      EXPECT_NEAR(y[i], b[i] + 0.75 * a[i], 4 * kU * (std::fabs(b[i]) + 1.5)) << i;

    if (n == 0) continue;
    const auto w = rand_vec(n, rng, 0.5f, 1.5f);
    std::vector<float> out(static_cast<size_t>(n));
    vec_rms_norm(a.data(), w.data(), n, 1e-6f, out.data());
    double ss = 0;
    for (float v : a) ss += double(v) * v;
    const double inv = 1.0 / std::sqrt(ss / n + 1e-6);
    for (int64_t i = 0; i < n; ++i)
      EXPECT_NEAR(out[i], a[i] * inv * w[i], (2 * n + 8) * kU * std::fabs(a[i] * inv * w[i]) + 1e-30) << i;
    vec_rms_norm(a.data(), w.data(), n, 1e-6f, const_cast<float*>(a.data()));  // in place
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(a[i], out[i]);
  }
}

TEST(VectorOps, SoftmaxSumsToOne) {
  std::mt19937 rng(6);
  auto x = rand_vec(257, rng, -30.0f, 30.0f);
  const auto orig = x;
  vec_softmax(x.data(), 257);
  double mx = orig[0], sum = 0;
  for (float v : orig) mx = std::max<double>(mx, v);
  for (float v : orig) sum += std::exp(v - mx);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], std::exp(orig[i] - mx) / sum, 1e-6);
}

TEST(VectorOps, ArgmaxFirstOfTiesIgnoresNaN) {
  std::mt19937 rng(8);
  auto x = rand_vec(151936, rng);
  x[100000] = 5.0f;
  x[120000] = 5.0f;
  EXPECT_EQ(vec_argmax(x.data(), 151936), 100000);
  x[3] = NAN;
  x[150001] = 7.0f;
  EXPECT_EQ(vec_argmax(x.data(), 151936), 150001);
  for (int64_t n : {1, 5, 9, 17}) {  // tails shorter than a vector
    std::vector<float> t(static_cast<size_t>(n), -1.0f);
    t[static_cast<size_t>(n - 1)] = 0.0f;
    EXPECT_EQ(vec_argmax(t.data(), n), n - 1);
  }
  std::vector<float> ninf(9, -INFINITY);
  EXPECT_EQ(vec_argmax(ninf.data(), 9), 0);
  EXPECT_EQ(vec_argmax(x.data(), 0), -1);
}

}  // namespace
}  // namespace nbits::kernels
