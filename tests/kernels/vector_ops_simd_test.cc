// The SIMD vector helpers (exp, sigmoid, softmax pieces, row dots, row
// accumulation, binary arithmetic) and kernels::attend_group against scalar
// double-precision references on odd and even sizes, with explicit error bounds.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <random>
#include <vector>

#include "attention_reference.h"
#include "base/fp16.h"
#include "kernels/attention.h"
#include "kernels/vector_ops.h"

namespace nbits::kernels {
namespace {

constexpr double kU = 1.0 / 16777216.0;  // fp32 unit roundoff
const int64_t kSizes[] = {0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000};

// Error of got against the exact value want, in fp32 ulps of want (subnormal ulp below FLT_MIN).
double ulps(float got, double want) {
  if (std::isinf(want) || want > FLT_MAX) return std::isinf(got) && got > 0 ? 0.0 : 1e30;
  const double a = std::fabs(want);
  const double ulp = a < FLT_MIN ? std::ldexp(1.0, -149) : std::ldexp(1.0, std::ilogb(a) - 23);
  return std::fabs(got - want) / ulp;
}

// Sweep of [-110, 110] (normal, subnormal, overflowing results) plus edge values.
std::vector<float> exp_inputs() {
  std::vector<float> x;
  for (int i = -110000; i <= 110000; i += 7) x.push_back(i * 1e-3f + 1e-4f * (i % 13));
  for (float v : {0.0f, -0.0f, 1.0f, -1.0f, 88.72f, 88.7228f, 88.73f, -87.33f, -88.0f, -100.0f, -103.9f,
                  -104.0f, 1e-8f, -1e-8f, 0.34657359f, -0.34657359f})
    x.push_back(v);
  return x;
}

TEST(VectorOpsSimd, ExpWithinTwoUlps) {
  const auto x = exp_inputs();
  std::vector<float> y(x.size());
  vec_exp(x.data(), y.data(), static_cast<int64_t>(x.size()));
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double e = ulps(y[i], std::exp(static_cast<double>(x[i])));
    worst = std::max(worst, e);
    ASSERT_LE(e, 2.0) << "exp(" << x[i] << ") = " << y[i];
  }
  std::printf("exp: worst %.2f ulp over %zu inputs\n", worst, x.size());
  const float special[] = {INFINITY, -INFINITY, NAN, 89.0f, -110.0f, -200.0f, 1e30f, -1e30f, 0.0f};
  float out[9];
  vec_exp(special, out, 9);
  EXPECT_EQ(out[0], INFINITY);
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_TRUE(std::isnan(out[2]));
  EXPECT_EQ(out[3], INFINITY);
  EXPECT_EQ(out[4], 0.0f);
  EXPECT_EQ(out[5], 0.0f);
  EXPECT_EQ(out[6], INFINITY);
  EXPECT_EQ(out[7], 0.0f);
  EXPECT_EQ(out[8], 1.0f);
}

TEST(VectorOpsSimd, SigmoidRelativeError) {
  const auto x = exp_inputs();
  std::vector<float> y(x.size());
  vec_sigmoid(x.data(), y.data(), static_cast<int64_t>(x.size()));
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double e = ulps(y[i], 1.0 / (1.0 + std::exp(-static_cast<double>(x[i]))));
    worst = std::max(worst, e);
    ASSERT_LE(e, 4.0) << "sigmoid(" << x[i] << ") = " << y[i];
  }
  std::printf("sigmoid: worst %.2f ulp over %zu inputs\n", worst, x.size());
  const float special[] = {INFINITY, -INFINITY, NAN, 0.0f, 200.0f, -200.0f};
  float out[6];
  vec_sigmoid(special, out, 6);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_TRUE(std::isnan(out[2]));
  EXPECT_EQ(out[3], 0.5f);
  EXPECT_EQ(out[4], 1.0f);
  EXPECT_EQ(out[5], 0.0f);
}

TEST(VectorOpsSimd, TailsAndInPlace) {
  std::mt19937 rng(3);
  for (int64_t n : kSizes) {
    // One element past the end must stay untouched.
    auto x = rand_vec(n + 1, rng, -20.0f, 20.0f);
    std::vector<float> y(static_cast<size_t>(n + 1), 7.0f), z(y);
    vec_exp(x.data(), y.data(), n);
    vec_sigmoid(x.data(), z.data(), n);
    EXPECT_EQ(y[n], 7.0f) << n;
    EXPECT_EQ(z[n], 7.0f) << n;
    for (int64_t i = 0; i < n; ++i) {
      float one_e, one_s;
      vec_exp(&x[i], &one_e, 1);
      vec_sigmoid(&x[i], &one_s, 1);
      ASSERT_EQ(y[i], one_e) << n << " " << i;  // lane position does not change a result
      ASSERT_EQ(z[i], one_s) << n << " " << i;
    }
    vec_sigmoid(x.data(), x.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(x[i], z[i]);
  }
}

TEST(VectorOpsSimd, SiluMulBitwiseLikeSeparateOps) {
  std::mt19937 rng(10);
  for (int64_t n : kSizes) {
    const auto x = rand_vec(n + 1, rng, -12.0f, 12.0f), up = rand_vec(n + 1, rng, -2.0f, 2.0f);
    std::vector<float> sig(static_cast<size_t>(n + 1)), want(sig.size()), swiglu(sig.size()),
        silu(sig.size(), 6.0f);
    vec_sigmoid(x.data(), sig.data(), n);
    vec_binary(VecOp::kMul, x.data(), sig.data(), want.data(), n);
    vec_silu_mul(x.data(), nullptr, silu.data(), n);
    EXPECT_EQ(silu[n], 6.0f);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(silu[i], want[i]) << n << " " << i;
    vec_binary(VecOp::kMul, want.data(), up.data(), want.data(), n);
    vec_silu_mul(x.data(), up.data(), swiglu.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(swiglu[i], want[i]) << n << " " << i;
    for (int64_t i = 0; i < n; ++i)  // and close to the exact value
      ASSERT_NEAR(silu[i], x[i] / (1.0 + std::exp(-double(x[i]))), 1e-6 * (1 + std::fabs(x[i]))) << x[i];
  }
}

TEST(VectorOpsSimd, MaxExpSumScaleSoftmax) {
  std::mt19937 rng(4);
  EXPECT_EQ(vec_max(nullptr, 0), -INFINITY);
  for (int64_t n : kSizes) {
    if (n == 0) continue;
    auto x = rand_vec(n, rng, -30.0f, 30.0f);
    x[static_cast<size_t>(n) / 2] = NAN;
    double mx = -INFINITY;
    for (float v : x)
      if (!std::isnan(v)) mx = std::max<double>(mx, v);
    if (n == 1) mx = -INFINITY;
    EXPECT_EQ(vec_max(x.data(), n), static_cast<float>(mx)) << n;

    auto s = rand_vec(n, rng, -30.0f, 30.0f);
    const auto orig = s;
    const float shift = 3.5f;
    const float sum = vec_exp_shift_sum(s.data(), n, shift);
    double want = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double e = std::exp(static_cast<double>(orig[i] - shift));  // fp32 difference, as specified
      want += e;
      ASSERT_LE(ulps(s[i], e), 3.0) << n << " " << i;
    }
    EXPECT_NEAR(sum, want, (n + 4) * kU * want) << n;
    vec_scale(s.data(), 0.5f, n);
    s = orig;
    vec_softmax(s.data(), n);
    double m = orig[0], z = 0;
    for (float v : orig) m = std::max<double>(m, v);
    for (float v : orig) z += std::exp(v - m);
    for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(s[i], std::exp(orig[i] - m) / z, 1e-6) << n << " " << i;
  }
}

TEST(VectorOpsSimd, DotRowsAndAccumulateRows) {
  std::mt19937 rng(5);
  for (int64_t nx : {1, 2, 3})
    for (int64_t rows : {0, 1, 3, 4, 7, 8, 9, 17, 64, 65})
      for (int64_t n : {1, 7, 8, 31, 32, 40, 63, 64, 65, 100, 128, 129}) {
        const int64_t xs = n + 2, ys = rows + 3;  // strides wider than a row
        const auto x = rand_vec(nx * xs, rng, -2.0f, 2.0f), M = rand_vec(rows * n, rng, -2.0f, 2.0f);
        std::vector<float> y(static_cast<size_t>(nx * ys), 9.0f);
        vec_dot_rows(x.data(), nx, xs, M.data(), rows, n, 0.25f, y.data(), ys);
        for (int64_t g = 0; g < nx; ++g) {
          for (int64_t j = rows; j < ys; ++j) ASSERT_EQ(y[g * ys + j], 9.0f);
          for (int64_t j = 0; j < rows; ++j) {
            double want = 0, mag = 0;
            for (int64_t i = 0; i < n; ++i) {
              want += double(x[g * xs + i]) * M[j * n + i];
              mag += std::fabs(double(x[g * xs + i]) * M[j * n + i]);
            }
            ASSERT_NEAR(y[g * ys + j], 0.25 * want, 0.25 * 2 * (n + 2) * kU * mag + 1e-30)
                << nx << " " << rows << "x" << n << " " << g << " " << j;
          }
        }

        const int64_t ps = rows + 1, os = n + 1;
        const auto p = rand_vec(nx * ps, rng, 0.0f, 1.0f), y0 = rand_vec(nx * os, rng, -1.0f, 1.0f);
        auto acc = y0;
        vec_accumulate_rows(p.data(), nx, ps, M.data(), rows, n, acc.data(), os);
        for (int64_t g = 0; g < nx; ++g) {
          EXPECT_EQ(acc[g * os + n], y0[g * os + n]);
          for (int64_t i = 0; i < n; ++i) {
            double want = y0[g * os + i], mag = std::fabs(want);
            for (int64_t j = 0; j < rows; ++j) {
              want += double(p[g * ps + j]) * M[j * n + i];
              mag += std::fabs(double(p[g * ps + j]) * M[j * n + i]);
            }
            ASSERT_NEAR(acc[g * os + i], want, 2 * (rows + 2) * kU * mag + 1e-30)
                << nx << " " << rows << "x" << n << " " << g << " " << i;
          }
        }
      }
}

TEST(VectorOpsSimd, SumSquaresRowsBitwiseSequential) {
  std::mt19937 rng(9);
  for (int64_t rows : {0, 1, 7, 8, 9, 16, 21})
    for (int64_t n : {1, 7, 8, 9, 64, 65, 896}) {
      const auto x = rand_vec(rows * n, rng, -3.0f, 3.0f);
      std::vector<float> out(static_cast<size_t>(rows + 1), 4.0f);
      vec_sum_squares_rows(x.data(), rows, n, out.data());
      EXPECT_EQ(out[rows], 4.0f);
      for (int64_t r = 0; r < rows; ++r) {
        float s = 0.0f;
        for (int64_t i = 0; i < n; ++i) {
          volatile float p = x[r * n + i] * x[r * n + i];  // rounded product, no fused multiply-add
          s += p;
        }
        ASSERT_EQ(out[r], s) << rows << "x" << n << " row " << r;
      }
    }
}

float ref_op(VecOp op, float a, float b) {
  switch (op) {
    case VecOp::kAdd:
      return a + b;
    case VecOp::kSub:
      return a - b;
    case VecOp::kMul:
      return a * b;
    case VecOp::kDiv:
      return a / b;
  }
  return 0;
}

TEST(VectorOpsSimd, BinaryExactlyLikeScalar) {
  std::mt19937 rng(6);
  for (VecOp op : {VecOp::kAdd, VecOp::kSub, VecOp::kMul, VecOp::kDiv})
    for (int64_t n : kSizes) {
      const auto a = rand_vec(n + 1, rng, -3.0f, 3.0f), b = rand_vec(n + 1, rng, 0.5f, 3.0f);
      std::vector<float> y(static_cast<size_t>(n + 1), 5.0f), ys = y, yf = y;
      vec_binary(op, a.data(), b.data(), y.data(), n);
      vec_binary_scalar(op, a.data(), b[0], false, ys.data(), n);
      vec_binary_scalar(op, a.data(), b[0], true, yf.data(), n);
      EXPECT_EQ(y[n], 5.0f);
      EXPECT_EQ(ys[n], 5.0f);
      EXPECT_EQ(yf[n], 5.0f);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(y[i], ref_op(op, a[i], b[i])) << static_cast<int>(op) << " " << n << " " << i;
        ASSERT_EQ(ys[i], ref_op(op, a[i], b[0])) << static_cast<int>(op) << " " << n << " " << i;
        ASSERT_EQ(yf[i], ref_op(op, b[0], a[i])) << static_cast<int>(op) << " " << n << " " << i;
      }
      auto in_place = a;
      vec_binary(op, in_place.data(), b.data(), in_place.data(), n);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(in_place[i], y[i]);
    }
}

TEST(VectorOpsSimd, AttendGroupMatchesReference) {
  std::mt19937 rng(7);
  for (int64_t H : {8, 40, 64, 72, 128})
    for (int64_t nq : {1, 2, 3, 7})
      for (int64_t n : {1, 5, 8, 63, 200}) {
        AttentionParams p;
        p.head_size = H;
        p.scale = 1.0f / std::sqrt(static_cast<float>(H));
        p.softcap = n == 63 ? 5.0f : 0.0f;
        p.smooth = n == 5;
        const auto sinks = rand_vec(nq, rng, -4.0f, 6.0f);
        if (n == 8 || n == 200) p.sinks = sinks.data();  // per-head attention sinks
        const int64_t qs = H + 3, os = H + 5;            // strides wider than a row
        const auto q = rand_vec(nq * qs, rng, -2.0f, 2.0f);
        const auto K = rand_vec(n * H, rng, -2.0f, 2.0f), V = rand_vec(n * H, rng, -1.0f, 1.0f);
        std::vector<float> scratch(static_cast<size_t>(nq * n)), out(static_cast<size_t>(nq * os), 3.0f);
        attend_group(q.data(), qs, nq, K.data(), V.data(), n, p, scratch.data(), out.data(), os);
        for (int64_t g = 0; g < nq; ++g) {
          const auto want = reference(q.data() + g * qs, K.data(), V.data(), 0, n, p, g);
          for (int64_t i = 0; i < H; ++i)
            ASSERT_NEAR(out[g * os + i], want[i], 2e-6) << "H " << H << " nq " << nq << " n " << n;
          for (int64_t i = H; i < os; ++i) ASSERT_EQ(out[g * os + i], 3.0f);  // gap untouched
        }
      }
}

// Rounds to fp16: the bits, and the float they stand for.
std::vector<uint16_t> to_half(const std::vector<float>& v, std::vector<float>& widened) {
  std::vector<uint16_t> h(v.size());
  widened.resize(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    h[i] = float_to_fp16(v[i]);
    widened[i] = fp16_to_float(h[i]);
  }
  return h;
}

// The fp16 twins (an fp16 KV cache) compute exactly what the fp32 versions do on the widened values.
TEST(VectorOpsSimd, Fp16RowsBitwiseLikeWidenedFp32) {
  std::mt19937 rng(13);
  for (int64_t nx : {1, 2, 3})
    for (int64_t rows : {0, 1, 3, 4, 7, 8, 9, 17, 65})
      for (int64_t n : {1, 7, 8, 31, 64, 65, 129}) {
        const int64_t xs = n + 2, ys = rows + 3;
        const auto x = rand_vec(nx * xs, rng, -2.0f, 2.0f);
        std::vector<float> Mf;
        const auto M = to_half(rand_vec(rows * n, rng, -2.0f, 2.0f), Mf);
        std::vector<float> y16(static_cast<size_t>(nx * ys), 9.0f), y32(y16);
        vec_dot_rows_f16(x.data(), nx, xs, M.data(), rows, n, 0.25f, y16.data(), ys);
        vec_dot_rows(x.data(), nx, xs, Mf.data(), rows, n, 0.25f, y32.data(), ys);
        ASSERT_EQ(y16, y32) << "dot_rows " << nx << " " << rows << "x" << n;
        const int64_t ps = rows + 1, os = n + 1;
        const auto p = rand_vec(nx * ps, rng, 0.0f, 1.0f), y0 = rand_vec(nx * os, rng, -1.0f, 1.0f);
        auto a16 = y0, a32 = y0;
        vec_accumulate_rows_f16(p.data(), nx, ps, M.data(), rows, n, a16.data(), os);
        vec_accumulate_rows(p.data(), nx, ps, Mf.data(), rows, n, a32.data(), os);
        ASSERT_EQ(a16, a32) << "accumulate_rows " << nx << " " << rows << "x" << n;
      }
}

TEST(VectorOpsSimd, AttendGroupFp16CacheLikeWidened) {
  std::mt19937 rng(17);
  for (int64_t H : {8, 64, 72})
    for (int64_t nq : {1, 3, 7})
      for (int64_t n : {1, 5, 63, 200}) {
        AttentionParams p;
        p.head_size = H;
        p.scale = 1.0f / std::sqrt(static_cast<float>(H));
        const auto q = rand_vec(nq * H, rng, -2.0f, 2.0f);
        std::vector<float> Kf, Vf;
        const auto K = to_half(rand_vec(n * H, rng, -2.0f, 2.0f), Kf);
        const auto V = to_half(rand_vec(n * H, rng, -1.0f, 1.0f), Vf);
        std::vector<float> scratch(static_cast<size_t>(nq * n)), o16(static_cast<size_t>(nq * H)), o32(o16);
        attend_group(q.data(), H, nq, K.data(), V.data(), n, p, scratch.data(), o16.data(), H);
        attend_group(q.data(), H, nq, Kf.data(), Vf.data(), n, p, scratch.data(), o32.data(), H);
        ASSERT_EQ(o16, o32) << "H " << H << " nq " << nq << " n " << n;
      }
}

}  // namespace
}  // namespace nbits::kernels
