// Float x16 panels (fp16, bf16, fp32) (kernels/float_x16_matmul.h): every kernel this CPU runs is
// bitwise equal to the scalar reference, and the reference is within fp32
// rounding of a double-precision product of the same half weights, over random
// shapes (odd K, N not a multiple of 16, M from 1 past the 4-row tile), fp16 and
// bf16 and fp32, whole and partial panel ranges.
#include "kernels/float_x16_matmul.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <random>
#include <utility>
#include <vector>

#include "base/fp16.h"

namespace nbits::kernels {
namespace {

struct Case {
  int64_t M, K, N;
};

void check(const Case& c, X16Float elem, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<uint16_t> B(static_cast<size_t>(c.K * c.N));
  std::vector<float> Bf(B.size());
  for (size_t i = 0; i < B.size(); ++i) {
    const float v = d(rng);
    B[i] = elem == X16Float::kBF16 ? float_to_bf16(v) : float_to_fp16(v);
    Bf[i] = elem == X16Float::kBF16 ? bf16_to_float(B[i]) : elem == X16Float::kF16 ? fp16_to_float(B[i]) : v;
  }
  const int64_t lda = c.K + 3, ldy = c.N + 5;  // strides wider than the rows
  std::vector<float> A(static_cast<size_t>(c.M * lda));
  for (auto& x : A) x = d(rng);
  const PackedFloatX16 w = elem == X16Float::kF32 ? pack_float_x16(Bf.data(), c.K, c.N, elem)
                                                  : pack_float_x16(B.data(), c.K, c.N, elem);
  ASSERT_EQ(w.panels, (c.N + 15) / 16);
  std::vector<float> ref(static_cast<size_t>(c.M * ldy), -7.0f);
  float_x16_ref().gemm(w, 0, w.panels, c.M, A.data(), lda, ref.data(), ldy);
  for (const FloatX16Kernel& kernel : float_x16_available()) {
    // Each kernel in two panel ranges (as threads split them).
    std::vector<float> got(ref.size(), -7.0f);
    const int64_t mid = w.panels / 2;
    kernel.gemm(w, 0, mid, c.M, A.data(), lda, got.data(), ldy);
    kernel.gemm(w, mid, w.panels, c.M, A.data(), lda, got.data(), ldy);
    for (int64_t m = 0; m < c.M; ++m) {
      for (int64_t n = 0; n < c.N; ++n)
        ASSERT_EQ(got[m * ldy + n], ref[m * ldy + n]) << kernel.name(elem) << " M=" << c.M << " K=" << c.K
                                                      << " N=" << c.N << " at (" << m << "," << n << ")";
      for (int64_t n = c.N; n < ldy; ++n)
        ASSERT_EQ(got[m * ldy + n], -7.0f) << kernel.name(elem) << " wrote past N";
    }
  }
  for (int64_t m = 0; m < c.M; ++m) {
    for (int64_t n = 0; n < c.N; ++n) {
      double exact = 0, mag = 0;
      for (int64_t k = 0; k < c.K; ++k) {
        exact += static_cast<double>(A[m * lda + k]) * Bf[k * c.N + n];
        mag += std::fabs(static_cast<double>(A[m * lda + k]) * Bf[k * c.N + n]);
      }
      const float r = ref[m * ldy + n];
      // Sequential fp32 fma sum: |error| <= K * u * sum|terms| (u = 2^-24), loosely.
      ASSERT_LE(std::fabs(r - exact), c.K * std::ldexp(1.0, -24) * mag + 1e-30)
          << "M=" << c.M << " K=" << c.K << " N=" << c.N << " at (" << m << "," << n << ")";
    }
  }
}

TEST(FloatX16MatMul, BestEqualsReferenceOnRandomShapes) {
  std::mt19937 rng(7);
  std::vector<Case> cases = {{1, 1, 1},    {1, 16, 16}, {1, 33, 17},  {2, 7, 31},    {3, 64, 48}, {4, 5, 16},
                             {5, 129, 70}, {6, 31, 65}, {9, 96, 100}, {1, 300, 200}, {13, 17, 3}};
  std::uniform_int_distribution<int> dm(1, 11), dk(1, 200), dn(1, 150);
  for (int i = 0; i < 12; ++i) cases.push_back({dm(rng), dk(rng), dn(rng)});
  for (const Case& c : cases)
    for (X16Float e : {X16Float::kF16, X16Float::kBF16, X16Float::kF32}) check(c, e, rng);
  for (const FloatX16Kernel& k : float_x16_available())
    std::printf("checked: %s, %s\n", k.half_name, k.fp32_name);
}

TEST(FloatX16MatMul, PackPadsColumnsPastN) {
  std::vector<uint16_t> B(3 * 20, float_to_fp16(1.0f));
  const PackedFloatX16 w = pack_float_x16(B.data(), 3, 20, X16Float::kF16);
  ASSERT_EQ(w.panels, 2);
  const uint16_t* p1 = w.panel<uint16_t>(1);
  for (int64_t k = 0; k < 3; ++k)
    for (int j = 0; j < 16; ++j) EXPECT_EQ(p1[k * 16 + j], j < 4 ? float_to_fp16(1.0f) : 0) << k << "," << j;
  std::vector<float> F(3 * 20);
  for (size_t i = 0; i < F.size(); ++i) F[i] = static_cast<float>(i) + 0.5f;
  const PackedFloatX16 f = pack_float_x16(F.data(), 3, 20, X16Float::kF32);
  ASSERT_EQ(f.data.size(), size_t{2 * 3 * 16 * 4});
  for (int64_t k = 0; k < 3; ++k)
    for (int j = 0; j < 16; ++j) {
      EXPECT_EQ(f.panel<float>(0)[k * 16 + j], F[static_cast<size_t>(k * 20 + j)]);
      EXPECT_EQ(f.panel<float>(1)[k * 16 + j], j < 4 ? F[static_cast<size_t>(k * 20 + 16 + j)] : 0.0f);
    }
}

// B stored [N, K] (a tied embedding): packed equal to its transpose packed as [K, N], from a
// misaligned view, and consumed() reports every byte of B exactly once, in ranges of whole rows.
TEST(FloatX16MatMul, PackNkEqualsTransposeAndReportsConsumedRows) {
  std::mt19937 rng(11);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (const Case& c : std::vector<Case>{{1, 5, 3}, {1, 33, 17}, {1, 64, 16 * 64 * 2 + 9}}) {
    std::vector<float> nk(static_cast<size_t>(c.N * c.K)), kn(nk.size());
    for (int64_t n = 0; n < c.N; ++n)
      for (int64_t k = 0; k < c.K; ++k) kn[k * c.N + n] = nk[n * c.K + k] = d(rng);
    std::vector<uint8_t> raw(nk.size() * 4 + 1);  // B one byte past an aligned address
    std::memcpy(raw.data() + 1, nk.data(), nk.size() * 4);
    ThreadPool three(3);
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &three}) {
      std::vector<std::pair<size_t, size_t>> seen;  // (offset, bytes)
      std::mutex mu;
      const PackedFloatX16 a =
          pack_float_x16(raw.data() + 1, c.K, c.N, X16Float::kF32, pool, true, [&](const void* p, size_t n) {
            std::lock_guard<std::mutex> lock(mu);
            seen.emplace_back(static_cast<const uint8_t*>(p) - raw.data() - 1, n);
          });
      const PackedFloatX16 b = pack_float_x16(kn.data(), c.K, c.N, X16Float::kF32);
      ASSERT_EQ(a.data.size(), b.data.size());
      EXPECT_EQ(std::memcmp(a.data.data(), b.data.data(), a.data.size()), 0) << "N=" << c.N << " K=" << c.K;
      std::sort(seen.begin(), seen.end());
      size_t at = 0;
      for (const auto& [off, n] : seen) {
        EXPECT_EQ(off, at);
        EXPECT_EQ(n % static_cast<size_t>(c.K * 4), 0u);
        at = off + n;
      }
      EXPECT_EQ(at, nk.size() * 4);
    }
  }
}

}  // namespace
}  // namespace nbits::kernels
