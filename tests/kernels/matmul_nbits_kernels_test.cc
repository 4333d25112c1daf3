// Table-driven tests: every registered MatMulNBits kernel set that this CPU
// supports is compared with the scalar reference on random weights (bits 4/8,
// block 16..256, K not a multiple of the block, N not a multiple of 16,
// symmetric and asymmetric, with and without bias, M in {1..33}), in both
// packed formats: fp32 scales and fp16 scales (PackOptions::fp16_scales). With
// fp16 scales the contract is the same with every scale replaced by its fp16
// rounding, so the reference runs on the rounded scales.
//
// Error bounds (u = 2^-24, fp32 unit roundoff). Both sides compute the same
// exact quantities and differ only in fp32 rounding / summation order:
//  * CompInt8: y = sum_b float(dot_b) * (sa_b * sb_b) with exact int32 dot_b.
//    Each side is within gamma_(kb+2) * T of the exact sum, with
//    T = sum_b |dot_b * sa_b * sb_b| (+ |bias|), so |diff| <= 2 (kb+3) u T.
//  * CompFp32: y = sum_k a_k (q_k - zp_b) s_b. Any split into per-block partial
//    sums (including sum a*q - zp * sum a) is within gamma_(K+2kb+4) * T of the
//    exact value with T = sum_k |a_k| (|q_k| + |zp_b|) |s_b| (+ |bias|).
//  * Block mins (GGUF; QuantizedMatrix::mins): CompInt8 adds kb terms
//    min_b * (sa_b * isum_b) (two roundings each, one more addition each): the
//    reference and a set that folds them into its blocks (the x16 int8 sets: bit for
//    bit) sum 2kb terms, a set with the second pass (pack_kernel) sums the same terms
//    as two sums of kb added once: each side within gamma_(2kb+3) * T with T now
//    also sum_b |min_b sa_b isum_b|, so |diff| <= 2 (2kb+4) u T. CompFp32: the
//    reference adds a_k * min_b per element, the second pass min_b * (block sum of
//    a): both within gamma_(K+2kb+6) * T with T also sum_k |a_k| |min_b|.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/fp16.h"
#include "kernels/matmul_nbits.h"
#include "kernels/ref/matmul_nbits_ref.h"
#include "kernels/x16_matmul.h"
#include "quant/packed_x16.h"
#include "quant/quantize_a.h"
#include "random_weight.h"

namespace nbits::kernels {
namespace {

// NBITS_KERNEL_CHOICE=off for a scope: make_matmul_nbits then takes the table's first supported set
// with its own format and micro-kernels.
struct ChoiceOff {
  ChoiceOff() { ::setenv("NBITS_KERNEL_CHOICE", "off", 1); }
  ~ChoiceOff() { ::unsetenv("NBITS_KERNEL_CHOICE"); }
};

using testing::random_a;
using testing::RandomWeight;

constexpr double kU = 1.0 / 16777216.0;  // 2^-24

PackOptions scales_opts(bool fp16) {
  PackOptions o;
  o.fp16_scales = fp16;
  return o;
}

// `w` with every scale rounded to fp16 (what a kernel packing fp16 scales computes with).
struct Fp16Rounded {
  std::vector<float> scales;
  QuantizedMatrix w;
  explicit Fp16Rounded(const QuantizedMatrix& src) : w(src) {
    scales.resize(static_cast<size_t>(src.N * src.k_blocks()));
    for (size_t i = 0; i < scales.size(); ++i) scales[i] = fp16_to_float(float_to_fp16(src.scales[i]));
    w.scales = scales.data();
  }
};

// True for kernel sets whose packing honours PackOptions::fp16_scales.
bool has_fp16_format(const MatMulNBitsKernel& k) { return k.pack_with != nullptr; }

// Per-output error bounds (see the file comment).
std::vector<double> int8_bounds(const QuantizedMatrix& w, const std::vector<float>& A, int64_t M,
                                const float* bias) {
  const int64_t kb = w.k_blocks();
  std::vector<int8_t> qa(static_cast<size_t>(kb * w.block_size));
  std::vector<float> sa(static_cast<size_t>(kb));
  std::vector<double> tol(static_cast<size_t>(M * w.N));
  for (int64_t m = 0; m < M; ++m) {
    quant::quantize_row_blocks(A.data() + m * w.K, w.K, w.block_size, qa.data(), sa.data());
    for (int64_t n = 0; n < w.N; ++n) {
      double t = bias != nullptr ? std::fabs(bias[n]) : 0.0;
      for (int64_t b = 0; b < kb; ++b) {
        t += std::fabs(static_cast<double>(block_dot_ref(w, n, b, qa.data() + b * w.block_size)) * sa[b] *
                       w.scale(n, b));
        if (w.mins != nullptr) {
          int64_t isum = 0;
          for (int j = 0; j < w.block_size; ++j) isum += qa[static_cast<size_t>(b * w.block_size + j)];
          t += std::fabs(static_cast<double>(w.block_min(n, b)) * sa[b] * static_cast<double>(isum));
        }
      }
      const double terms = w.mins != nullptr ? 2 * kb + 4 : kb + 3;
      tol[static_cast<size_t>(m * w.N + n)] = 2.0 * terms * kU * t + 1e-30;
    }
  }
  return tol;
}

std::vector<double> fp32_bounds(const QuantizedMatrix& w, const std::vector<float>& A, int64_t M,
                                const float* bias) {
  const int64_t kb = w.k_blocks();
  std::vector<double> tol(static_cast<size_t>(M * w.N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < w.N; ++n) {
      double t = bias != nullptr ? std::fabs(bias[n]) : 0.0;
      for (int64_t k = 0; k < w.K; ++k) {
        const int64_t b = k / w.block_size;
        t += std::fabs(A[static_cast<size_t>(m * w.K + k)]) *
             ((w.code(n, k) + w.zero_point(n, b)) * std::fabs(w.scale(n, b)) + std::fabs(w.block_min(n, b)));
      }
      tol[static_cast<size_t>(m * w.N + n)] = 2.0 * (w.K + 2 * kb + 6) * kU * t + 1e-30;
    }
  return tol;
}

struct Shape {
  int bits, block;
  int64_t K, N;
  bool asym, bias;
  bool mins, zp0;                  // block mins; with zero points all 0 (Q4_1 / Q4_K) instead of random ones
  int span_bits = 8, code_lo = 0;  // int8 codes in [code_lo, code_lo + 2^span_bits)
};

std::vector<Shape> shapes() {
  std::vector<Shape> s;
  for (int bits : {4, 8})
    for (int block : {16, 32, 64, 128, 256}) {
      s.push_back({bits, block, (block <= 64 ? 3 : 1) * block, 32, false, true, false,
                   false});  // K odd multiple of the block
      s.push_back({bits, block, block + block / 2 + 1, 37, true, false, false, false});  // K, N ragged, zp
      s.push_back({bits, block, 2 * block + 5, 37, true, true, true, true});             // mins, zp 0 (Q4_1)
    }
  s.push_back({4, 32, 7, 5, true, true, false, false});  // K shorter than one block, N < one panel
  s.push_back({8, 16, 33, 17, false, false, false, false});
  s.push_back({4, 32, 172, 64, true, false, false, false});  // stories260K down_proj (6 blocks, ragged, zp)
  s.push_back({4, 32, 7, 5, true, true, true, true});        // mins, K < one block
  s.push_back({4, 32, 100, 40, true, false, true, false});   // mins with random zero points
  s.push_back({8, 32, 96, 33, false, true, true, false});    // mins, implicit zero point (Q5_K)
  s.push_back({4, 64, 160, 20, false, false, true, false});
  // K past the dequantize-once CompFp32 GEMM's 256-k chunk with N > K (its panels-outermost order;
  // blocks 128 and 256 above cover chunks-outermost), ragged K and N, zero points.
  s.push_back({4, 32, 300, 330, true, true, false, false});
  // int8 codes of a narrow span (GGUF Q5_0: 112..143, Q6_K: 96..159, Q5_K: 128..159 with mins,
  // a 7-bit span, one lower than 2^(span) wide), ragged K and N, blocks 16 and 32 and 256.
  s.push_back({8, 32, 2 * 32 + 5, 37, false, true, false, false, 5, 112});
  s.push_back({8, 16, 4 * 16 + 3, 21, false, false, false, false, 6, 96});
  s.push_back({8, 32, 96, 33, false, true, true, false, 5, 128});
  s.push_back({8, 256, 256 + 77, 19, true, false, false, false, 7, 60});
  s.push_back({8, 64, 64 + 9, 40, false, false, false, false, 4, 200});
  return s;
}

TEST(MatMulNBitsKernels, MatchReferenceOnEveryShape) {
  const CpuFeatures& cpu = cpu_features();
  std::mt19937 rng(1234);
  ThreadPool pool1(1), pool2(2);
  std::vector<std::string> skipped;
  int checked = 0, checked_fp16 = 0, checked_mins = 0;
  for (const Shape& sh : shapes()) {
    RandomWeight rw(sh.bits, sh.block, sh.K, sh.N, sh.asym, rng, sh.span_bits, sh.code_lo);
    if (sh.mins) rw.add_mins(sh.zp0, rng);
    const QuantizedMatrix& w = rw.w;
    std::vector<float> bias(static_cast<size_t>(sh.N));
    for (auto& b : bias) b = std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng);
    const float* bp = sh.bias ? bias.data() : nullptr;
    const Fp16Rounded rounded(w);
    for (int64_t M : {1, 2, 3, 4, 5, 7, 16, 33}) {
      const std::vector<float> A = random_a(M, sh.K, rng);
      for (bool fp16 : {false, true}) {
        const QuantizedMatrix& rw_ref = fp16 ? rounded.w : w;  // what the kernel must compute with
        std::vector<float> want_i8(static_cast<size_t>(M * sh.N)), want_f32(want_i8.size());
        matmul_nbits_ref_int8(rw_ref, A.data(), M, want_i8.data(), bp);
        matmul_nbits_ref_fp32(rw_ref, A.data(), M, want_f32.data(), bp);
        const std::vector<double> tol_i8 = int8_bounds(rw_ref, A, M, bp),
                                  tol_f32 = fp32_bounds(rw_ref, A, M, bp);
        for (const auto& k : matmul_nbits_kernels()) {
          if (!k.supports(w, cpu)) {
            const std::string why = std::string(k.name);
            if (std::find(skipped.begin(), skipped.end(), why) == skipped.end()) skipped.push_back(why);
            continue;
          }
          if (fp16 && !has_fp16_format(k)) continue;  // fp32 scales only: covered by the pass above
          SCOPED_TRACE(std::string(k.name) + (fp16 ? " fp16 scales" : " fp32 scales") +
                       " bits=" + std::to_string(sh.bits) + " block=" + std::to_string(sh.block) +
                       " K=" + std::to_string(sh.K) + " N=" + std::to_string(sh.N) +
                       " M=" + std::to_string(M) + (sh.asym ? " asym" : " sym") + (sh.bias ? " bias" : "") +
                       (sh.mins ? (sh.zp0 ? " mins zp0" : " mins") : "") +
                       (sh.span_bits < 8 ? " span " + std::to_string(sh.span_bits) : ""));
          auto packed = pack_kernel(k, w, scales_opts(fp16));
          std::vector<float> y1(want_i8.size(), NAN), y2(want_i8.size(), NAN);
          packed->run(A.data(), M, y1.data(), bp, pool1);
          packed->run(A.data(), M, y2.data(), bp, pool2);
          ASSERT_EQ(0, std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)))
              << "threads 1 vs 2 differ";
          const bool i8 = k.compute == Compute::kInt8;
          const auto& want = i8 ? want_i8 : want_f32;
          const auto& tol = i8 ? tol_i8 : tol_f32;
          for (size_t i = 0; i < y1.size(); ++i)
            ASSERT_LE(std::fabs(static_cast<double>(y1[i]) - want[i]), tol[i])
                << "at m=" << i / sh.N << " n=" << i % sh.N << " got " << y1[i] << " want " << want[i]
                << " via " << packed->kernel_name(M);
          // The x16 and t16 CompInt8 kernels keep one lane per column and the reference's
          // operation order, so they must match it bit for bit (catches FMA contraction);
          // with mins only the sets that fold them into their blocks.
          const std::string set = k.name;
          if (i8 && (set.rfind("x16_", 0) == 0 || set.rfind("t16_", 0) == 0) && (!sh.mins || k.mins)) {
            for (size_t i = 0; i < y1.size(); ++i) {
              ASSERT_EQ(y1[i], want[i]) << "not bit-exact at " << i;
            }
          }
          ++checked;
          if (fp16) ++checked_fp16;
          if (sh.mins) ++checked_mins;
        }
      }
    }
  }
  for (const auto& s : skipped)
    std::printf("[ skipped  ] %s: not supported on this CPU (%s) for some shapes\n", s.c_str(),
                cpu.describe().c_str());
  EXPECT_GT(checked, 0);
  EXPECT_GT(checked_mins, 0);
  if (cpu.avx2 && cpu.fma && cpu.f16c) {
    EXPECT_GT(checked_fp16, 0);
  }
}

TEST(MatMulNBitsKernels, KernelNameSaysGemvOrGemm) {
  std::mt19937 rng(7);
  RandomWeight rw(4, 32, 64, 32, false, rng);
  for (const auto& k : matmul_nbits_kernels()) {
    if (!k.supports(rw.w, cpu_features())) continue;
    auto p = k.pack(rw.w);
    EXPECT_NE(p->kernel_name(1), nullptr);
    EXPECT_GT(p->packed_bytes(), 0u);
    const std::string n1 = p->kernel_name(1), n2 = p->kernel_name(2);
    if (std::string(k.name).find("ref") == std::string::npos) {
      EXPECT_NE(n1.find("gemv"), std::string::npos) << k.name;
      EXPECT_NE(n2.find("gemm"), std::string::npos) << k.name;
    }
  }
}

// The table's order, with the measured choice off (NBITS_KERNEL_CHOICE=off; the choice has its
// own tests: tests/kernels/kernel_choice_test.cc).
TEST(MatMulNBitsKernels, DispatchPrefersFirstSupported) {
  const ChoiceOff off;
  std::mt19937 rng(9);
  RandomWeight rw(4, 32, 64, 32, false, rng);
  for (Compute c : {Compute::kInt8, Compute::kFp32}) {
    const MatMulNBitsKernel* first = nullptr;
    for (const auto& k : matmul_nbits_kernels())
      if (k.compute == c && k.supports(rw.w, cpu_features())) {
        first = &k;
        break;
      }
    ASSERT_NE(first, nullptr);
    auto picked = make_matmul_nbits(rw.w, c);
    EXPECT_STREQ(picked->kernel_name(1), first->pack(rw.w)->kernel_name(1));
  }
}

}  // namespace
}  // namespace nbits::kernels

namespace nbits::kernels {
namespace {

using testing::random_a;
using testing::RandomWeight;

// Small shapes run on one thread (too little work to split); this one is large
// enough that every kernel really splits N over 2 and 3 threads.
TEST(MatMulNBitsKernels, SplitOverThreadsIsExact) {
  std::mt19937 rng(99);
  RandomWeight rw(4, 32, 512, 1040, true, rng);
  for (int64_t M : {1, 5}) {
    const std::vector<float> A = random_a(M, 512, rng);
    for (const auto& k : matmul_nbits_kernels()) {
      if (!k.supports(rw.w, cpu_features())) continue;
      SCOPED_TRACE(std::string(k.name) + " M=" + std::to_string(M));
      auto packed = k.pack(rw.w);
      std::vector<float> y[3];
      for (int t = 1; t <= 3; ++t) {
        ThreadPool pool(t);
        y[t - 1].assign(static_cast<size_t>(M * 1040), NAN);
        packed->run(A.data(), M, y[t - 1].data(), nullptr, pool);
      }
      ASSERT_EQ(0, std::memcmp(y[0].data(), y[1].data(), y[0].size() * sizeof(float)));
      ASSERT_EQ(0, std::memcmp(y[0].data(), y[2].data(), y[0].size() * sizeof(float)));
      for (float v : y[0]) ASSERT_FALSE(std::isnan(v));
    }
  }
}

}  // namespace
}  // namespace nbits::kernels

namespace nbits::kernels {
namespace {

using testing::random_a;
using testing::RandomWeight;

// The 16-column panel formats: x16 (x86, arm64), t16 (IME), n16 (RVV); same bytes per block.
bool is_panel16(const MatMulNBitsKernel& k) {
  const std::string n = k.name;
  return n.rfind("x16_", 0) == 0 || n.rfind("t16_", 0) == 0 || n.rfind("n16_", 0) == 0;
}
bool says_fp16(const PackedMatMul& p, int64_t M) {
  return std::string(p.kernel_name(M)).find("16h_") !=
         std::string::npos;  // x16h_ (x86), t16h_ (IME), n16h_ (RVV)
}

// With fp16 scales the kernel names carry "16h_" (x16h_, t16h_, n16h_) and a block shrinks by
// 32 bytes; zero points take 16 bytes (not 64) in every 16-column format. Sets without
// an fp16 format ignore the option.
TEST(MatMulNBitsKernels, Fp16ScalesKernelNamesAndPackedBytes) {
  std::mt19937 rng(21);
  int seen = 0;
  for (int bits : {4, 8})
    for (bool asym : {false, true}) {
      RandomWeight rw(bits, 32, 64, 37, asym, rng);  // 3 panels x 2 blocks
      for (const auto& k : matmul_nbits_kernels()) {
        if (!k.supports(rw.w, cpu_features())) continue;
        SCOPED_TRACE(std::string(k.name) + " bits=" + std::to_string(bits) + (asym ? " asym" : " sym"));
        auto p32 = k.pack_opts(rw.w, scales_opts(false)), p16 = k.pack_opts(rw.w, scales_opts(true));
        if (!has_fp16_format(k)) {
          EXPECT_STREQ(p16->kernel_name(1), k.pack(rw.w)->kernel_name(1));
          EXPECT_EQ(p16->packed_bytes(), p32->packed_bytes());
          EXPECT_FALSE(says_fp16(*p16, 1));
          continue;
        }
        for (int64_t M : {1, 2}) {
          EXPECT_FALSE(says_fp16(*p32, M)) << p32->kernel_name(M);
          EXPECT_TRUE(says_fp16(*p16, M)) << p16->kernel_name(M);
        }
        if (!is_panel16(k)) continue;
        const size_t codes = 16 * 32 * bits / 8, zp = asym ? 16 : 0, blocks = 3 * 2;
        EXPECT_EQ(p32->packed_bytes(), blocks * (64 + zp + codes));
        EXPECT_EQ(p16->packed_bytes(), blocks * (32 + zp + codes));
        ++seen;
      }
    }
  if (cpu_features().avx2 && cpu_features().fma && cpu_features().f16c) {
    EXPECT_GT(seen, 0);
  }
}

// Scales that are exactly fp16 numbers are packed as fp16 by default (the x16 sets: x86 and NEON;
// RVV's n16 and IME's t16 packers do not make that choice yet), and every output is bit for bit
// the fp32 format's: M 1..33 (GEMV, small-M and GEMM paths), bits 4 and 8, symmetric and
// asymmetric, with GGUF mins, ragged K and N, 1 and 2 threads.
TEST(MatMulNBitsKernels, ExactFp16ScalesPackHalfWithIdenticalResults) {
  std::mt19937 rng(57);
  ThreadPool one(1), two(2);
  int seen = 0;
  for (int bits : {4, 8})
    for (int variant = 0; variant < 3; ++variant) {  // symmetric, asymmetric, mins with zero points 0
      RandomWeight rw(bits, 32, 200, 45, variant == 1, rng);
      if (variant == 2) rw.add_mins(true, rng);
      for (auto& sc : rw.scales) sc = fp16_to_float(float_to_fp16(sc));  // exactly fp16 now
      for (const auto& k : matmul_nbits_kernels()) {
        const bool x16 = std::string(k.name).rfind("x16_", 0) == 0;
        if (!k.supports(rw.w, cpu_features()) || !has_fp16_format(k) || !x16) continue;
        SCOPED_TRACE(std::string(k.name) + " bits=" + std::to_string(bits) + " variant " +
                     std::to_string(variant));
        PackOptions keep32;
        keep32.exact_fp16_scales = false;
        auto p16 = k.pack_opts(rw.w, PackOptions{}), p32 = k.pack_opts(rw.w, keep32);
        EXPECT_TRUE(says_fp16(*p16, 1)) << p16->kernel_name(1);
        EXPECT_FALSE(says_fp16(*p32, 1)) << p32->kernel_name(1);
        EXPECT_LT(p16->packed_bytes(), p32->packed_bytes());
        for (int64_t M : {1, 2, 3, 4, 7, 8, 16, 33}) {
          const std::vector<float> A = random_a(M, rw.w.K, rng);
          for (ThreadPool* pool : {&one, &two}) {
            std::vector<float> y16(static_cast<size_t>(M * rw.w.N)), y32(y16.size());
            p16->run(A.data(), M, y16.data(), nullptr, *pool);
            p32->run(A.data(), M, y32.data(), nullptr, *pool);
            EXPECT_EQ(0, std::memcmp(y16.data(), y32.data(), y16.size() * sizeof(float))) << "M=" << M;
          }
        }
        ++seen;
      }
    }
  if (cpu_features().avx2 && cpu_features().fma && cpu_features().f16c) {
    EXPECT_GT(seen, 0);
  }
}

// A matrix with a scale that fp16 cannot hold (overflow, or subnormal: more
// than ~1e-3 relative error) keeps fp32 scales: same kernel, bytes and bits as
// packing without the option. Scales at the edges of the normal range still go fp16.
TEST(MatMulNBitsKernels, Fp16ScalesFallBackToFp32OutOfRange) {
  std::mt19937 rng(33);
  ThreadPool pool(1);
  int seen = 0;
  for (float bad : {70000.0f, -1e5f, 1e-6f, -3e-5f, 65504.0f, 6.103515625e-05f}) {
    const bool fits = std::fabs(bad) == 65504.0f || std::fabs(bad) == 6.103515625e-05f;
    for (bool asym : {false, true}) {
      RandomWeight rw(4, 32, 96, 20, asym, rng);
      rw.scales[5] = bad;
      for (const auto& k : matmul_nbits_kernels()) {
        if (!has_fp16_format(k) || !k.supports(rw.w, cpu_features())) continue;
        SCOPED_TRACE(std::string(k.name) + " scale=" + std::to_string(bad));
        auto p16 = k.pack_opts(rw.w, scales_opts(true)), p32 = k.pack(rw.w);
        EXPECT_EQ(says_fp16(*p16, 1), fits) << p16->kernel_name(1);
        if (fits) continue;
        EXPECT_EQ(p16->packed_bytes(), p32->packed_bytes());
        for (int64_t M : {1, 3}) {
          const std::vector<float> A = random_a(M, 96, rng);
          std::vector<float> y16(static_cast<size_t>(M * 20), NAN), y32(y16.size(), NAN);
          p16->run(A.data(), M, y16.data(), nullptr, pool);
          p32->run(A.data(), M, y32.data(), nullptr, pool);
          ASSERT_EQ(0, std::memcmp(y16.data(), y32.data(), y16.size() * sizeof(float))) << "M=" << M;
        }
        ++seen;
      }
    }
  }
  if (cpu_features().avx2 && cpu_features().fma && cpu_features().f16c) {
    EXPECT_GT(seen, 0);
  }
}

// The table's order, with the measured choice off (NBITS_KERNEL_CHOICE=off; the choice has its
// own tests: tests/kernels/kernel_choice_test.cc).
TEST(MatMulNBitsKernels, DispatchPassesPackOptions) {
  const ChoiceOff off;
  std::mt19937 rng(5);
  RandomWeight rw(4, 32, 64, 32, true, rng);
  for (Compute c : {Compute::kInt8, Compute::kFp32}) {
    const MatMulNBitsKernel* first = nullptr;
    for (const auto& k : matmul_nbits_kernels())
      if (k.compute == c && k.supports(rw.w, cpu_features())) {
        first = &k;
        break;
      }
    ASSERT_NE(first, nullptr);
    auto picked = make_matmul_nbits(rw.w, c, scales_opts(true));
    EXPECT_STREQ(picked->kernel_name(1), first->pack_opts(rw.w, scales_opts(true))->kernel_name(1));
    EXPECT_EQ(picked->packed_bytes(), first->pack_opts(rw.w, scales_opts(true))->packed_bytes());
  }
}

// rows_consumed reports source rows in order, ends at N, and the result is the same.
TEST(MatMulNBitsKernels, PackReportsConsumedRowsInOrder) {
  std::mt19937 rng(9);
  RandomWeight rw(4, 32, 96, 1000, true, rng);
  for (Compute c : {Compute::kInt8, Compute::kFp32}) {
    std::vector<int64_t> calls;
    PackOptions o;
    o.rows_consumed = [&](int64_t n) { calls.push_back(n); };
    auto with = make_matmul_nbits(rw.w, c, o);
    auto without = make_matmul_nbits(rw.w, c, PackOptions{});
    EXPECT_STREQ(with->kernel_name(1), without->kernel_name(1));
    const std::string name = with->kernel_name(1);
    const bool panel16 = name.find("x16") != std::string::npos || name.find("t16") != std::string::npos ||
                         name.find("n16") != std::string::npos;
    if (panel16) {  // the 16-column packers report; others may not
      ASSERT_FALSE(calls.empty());
      EXPECT_EQ(calls.back(), 1000);
      for (size_t i = 1; i < calls.size(); ++i) EXPECT_GT(calls[i], calls[i - 1]);
    }
    ThreadPool pool2(2);
    PackOptions pooled;
    pooled.pool = &pool2;
    pooled.fp16_scales = true;
    auto parallel = make_matmul_nbits(rw.w, c, pooled),
         serial = make_matmul_nbits(rw.w, c, scales_opts(true));
    std::vector<float> A(96 * 3), y1(1000 * 3), y2(1000 * 3), y3(1000 * 3), y4(1000 * 3);
    for (auto& a : A) a = std::uniform_real_distribution<float>(-1, 1)(rng);
    ThreadPool pool(1);
    with->run(A.data(), 3, y1.data(), nullptr, pool);
    without->run(A.data(), 3, y2.data(), nullptr, pool);
    EXPECT_EQ(0, std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)));
    parallel->run(A.data(), 3, y3.data(), nullptr, pool);  // packed on 2 threads: same bits
    serial->run(A.data(), 3, y4.data(), nullptr, pool);
    EXPECT_EQ(0, std::memcmp(y3.data(), y4.data(), y3.size() * sizeof(float)));
  }
}

}  // namespace
}  // namespace nbits::kernels

namespace nbits::kernels {
namespace {

using testing::random_a;
using testing::RandomWeight;

const MatMulNBitsKernel* find_kernel_set(const char* name) {
  for (const auto& k : matmul_nbits_kernels())
    if (std::string(k.name) == name) return &k;
  return nullptr;
}

// Bit-for-bit equality with the reference of kernel set `name` on M rows in `ms`, N = 200 (13
// panels, the last one ragged), bits 4/8, blocks 16..256 with odd K, zero points (where the set
// takes them), block mins, fp16 scales, 1 and 2 threads; and block 512 with all-positive activations, where
// the activation block sums leave int16 (the VNNI vpmulld zero-point path). Skipped, with the
// reason, where the set is not built or the CPU lacks `needs`.
void dense_grid_bit_exact(const char* name, const char* needs, const std::vector<int64_t>& ms) {
  const MatMulNBitsKernel* k = find_kernel_set(name);
  if (k == nullptr) GTEST_SKIP() << name << " is not built for this architecture";
  std::mt19937 rng(4242);
  RandomWeight probe(4, 32, 64, 16, false, rng);
  if (!k->supports(probe.w, cpu_features()))
    GTEST_SKIP() << name << " needs " << needs
                 << "; this CPU (after NBITS_ISA): " << cpu_features().describe();
  struct Case {
    int bits, block;
    int64_t K;
    bool asym, positive, mins = false, zp0 = false;
    int span_bits = 8, code_lo = 0;
  };
  std::vector<Case> cases;
  for (int bits : {4, 8})
    for (int block : {16, 32, 64, 128, 256})
      for (bool asym : {false, true}) cases.push_back({bits, block, block + block / 2 + 1, asym, false});
  for (int bits : {4, 8}) cases.push_back({bits, 512, 1024 + 77, true, true});
  for (int bits : {4, 8}) cases.push_back({bits, 512, 1024 + 77, false, true});
  for (int block : {32, 128})  // block mins (GGUF Q4_1 / Q4_K: zero points all 0, or none)
    for (bool zp0 : {false, true}) cases.push_back({4, block, 3 * block + 5, false, false, true, zp0});
  // Mins with zero points that differ (no format makes them; the VNNI / AMX sets refuse them, the
  // AVX2 set and the reference run them).
  for (int bits : {4, 8}) cases.push_back({bits, 32, 3 * 32 + 5, true, false, true, false});
  // int8 codes of 5, 6 and 7-bit spans (GGUF Q5_0 / Q6_K as 8-bit codes; kernels may take them
  // unsigned and sum more steps in int16), blocks 16, 32 and 512 with positive activations.
  for (int span : {5, 6, 7})
    for (int block : {16, 32})
      cases.push_back({8, block, 3 * block + 7, span == 6, false, false, false, span, 64});
  cases.push_back({8, 512, 1024 + 77, false, true, false, false, 5, 112});
  cases.push_back({8, 64, 2 * 64 + 33, true, false, false, false, 5, 100});  // int5 with zero points
  const int64_t N = 200;
  ThreadPool pool1(1), pool2(2);
  int checked = 0;
  for (const Case& c : cases) {
    RandomWeight rw(c.bits, c.block, c.K, N, c.asym, rng, c.span_bits, c.code_lo);
    if (c.mins) rw.add_mins(c.zp0, rng);
    if (!k->supports(rw.w, cpu_features())) continue;  // e.g. AMX: symmetric weights only
    const Fp16Rounded rounded(rw.w);
    std::vector<float> bias(static_cast<size_t>(N));
    for (auto& b : bias) b = std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng);
    for (int64_t M : ms) {
      std::vector<float> A = random_a(M, c.K, rng);
      if (c.positive)
        for (auto& a : A) a = 0.5f + 0.5f * std::fabs(a);
      // fp32 scales, fp16 scales, and the K-quant formats (PackOptions::super_scales / int6: int6
      // codes here, the scales being random; tests/kernels/super_scales_test.cc has the rest).
      for (int fmt = 0; fmt < 3; ++fmt) {
        const bool fp16 = fmt == 1;
        const float* bp = (M & 1) != 0 ? bias.data() : nullptr;
        SCOPED_TRACE(std::string(fmt == 2 ? "K-quant formats," : "") + (fp16 ? "fp16" : "fp32") +
                     " scales bits=" + std::to_string(c.bits) + " block=" + std::to_string(c.block) +
                     " K=" + std::to_string(c.K) + " M=" + std::to_string(M) + (c.asym ? " asym" : " sym") +
                     (c.mins ? (c.zp0 ? " mins zp0" : " mins") : "") +
                     (c.span_bits < 8 ? " span " + std::to_string(c.span_bits) : ""));
        std::vector<float> want(static_cast<size_t>(M * N)), y1(want.size(), NAN), y2(want.size(), NAN);
        matmul_nbits_ref_int8(fp16 ? rounded.w : rw.w, A.data(), M, want.data(), bp);
        PackOptions o = scales_opts(fp16);
        o.super_scales = o.int6 = fmt == 2;
        auto packed = k->pack_opts(rw.w, o);
        ASSERT_EQ(says_fp16(*packed, M), fp16) << packed->kernel_name(M);
        packed->run(A.data(), M, y1.data(), bp, pool1);
        packed->run(A.data(), M, y2.data(), bp, pool2);
        for (size_t i = 0; i < want.size(); ++i) {
          ASSERT_EQ(y1[i], want[i]) << "at m=" << i / N << " n=" << i % N << " via "
                                    << packed->kernel_name(M);
          ASSERT_EQ(y2[i], want[i]) << "2 threads, at m=" << i / N << " n=" << i % N;
        }
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 0);
}

// The AVX2 set: every remainder of its 4-row GEMM tiles up to M = 40, on int4, int8 and int8
// codes of narrow spans (the q8n kernels, int5, and int6 when asked).
TEST(MatMulNBitsKernels, Avx2BitExactOnDenseMGrid) {
  std::vector<int64_t> ms;
  for (int64_t M = 1; M <= 40; M += (M < 12 ? 1 : 7)) ms.push_back(M);
  dense_grid_bit_exact("x16_avx2_int8", "avx2 + fma + f16c", ms);
}

// GGUF's 5- and 6-bit types held as 8-bit codes take the AVX2 kernels for their span: a span of
// at most 5 bits in blocks of 32k is packed as int5 (q5x16), others read their 8-bit codes (q8n5,
// q8n6, q8n7) unless PackOptions::int6 packs spans of at most 6 bits as int6 (q6x16); at most 16
// distinct codes within 32 values are packed as lut4 (q4lx16); full-range int8 codes take the
// sign-trick int8 kernels.
TEST(MatMulNBitsKernels, Avx2NarrowInt8CodesTakeTheSpanKernels) {
  const MatMulNBitsKernel* k = find_kernel_set("x16_avx2_int8");
  if (k == nullptr) GTEST_SKIP() << "x16_avx2_int8 is not built for this architecture";
  std::mt19937 rng(99);
  RandomWeight probe(4, 32, 64, 16, false, rng);
  if (!k->supports(probe.w, cpu_features())) GTEST_SKIP() << "needs avx2 + fma + f16c";
  const struct {
    int span, lo, block;
    const char *gemv, *gemm;
  } cases[] = {{5, 112, 32, "qgemv_q5x16_avx2", "qgemm_q5x16_4x16_avx2"},      // packed as int5
               {3, 0, 64, "qgemv_q4lx16_avx2", "qgemm_q4lx16_4x16_avx2"},      // 8 codes: lut4
               {5, 112, 16, "qgemv_q8n5x16_avx2", "qgemm_q8n5x16_4x16_avx2"},  // int5 needs blocks of 32k
               {6, 96, 16, "qgemv_q8n6x16_avx2", "qgemm_q8n6x16_4x16_avx2"},
               {7, 128, 32, "qgemv_q8n7x16_avx2", "qgemm_q8n7x16_4x16_avx2"},
               {8, 0, 32, "qgemv_q8x16_avx2", "qgemm_q8x16_4x8_avx2"}};
  for (const auto& c : cases) {
    RandomWeight rw(8, c.block, 100, 40, false, rng, c.span, c.lo);
    if (c.span == 8) rw.codes[0] = 0, rw.codes[1] = 255;  // the whole range, whatever the draw
    auto packed = k->pack_opts(rw.w, scales_opts(false));
    EXPECT_EQ(std::string(packed->kernel_name(1)), c.gemv) << "span " << c.span;
    EXPECT_EQ(std::string(packed->kernel_name(3)), c.gemm) << "span " << c.span;
    PackOptions int6;
    int6.int6 = true;
    const bool six = c.span <= 6 && !(c.span <= 5 && c.block % 32 == 0);
    auto p6 = k->pack_opts(rw.w, int6);
    EXPECT_EQ(std::string(p6->kernel_name(1)), six ? "qgemv_q6x16_avx2" : c.gemv) << "span " << c.span;
    EXPECT_EQ(std::string(p6->kernel_name(5)), six ? "qgemm_q6x16_4x16_avx2" : c.gemm) << "span " << c.span;
  }
}

// The AVX-512 VNNI set: every remainder of its 6-row GEMM tile up to M = 40, and a panel left
// over after its 2-panel GEMM tiles and 4-panel (int4) / 8-panel (int8) GEMV groups.
TEST(MatMulNBitsKernels, Avx512VnniBitExactOnDenseMGrid) {
  std::vector<int64_t> ms;
  for (int64_t M = 1; M <= 40; M += (M < 12 ? 1 : 7)) ms.push_back(M);
  dense_grid_bit_exact("x16_avx512vnni_int8", "avx512f/bw/vl/dq + avx512vnni", ms);
}

// The AVX-VNNI set (the same tile on ymm: a panel is two vectors): every remainder of its
// 4-row GEMM tile up to M = 40, and the panel left over after its 2-panel GEMV groups.
TEST(MatMulNBitsKernels, AvxVnniBitExactOnDenseMGrid) {
  std::vector<int64_t> ms;
  for (int64_t M = 1; M <= 40; M += (M < 12 ? 1 : 7)) ms.push_back(M);
  dense_grid_bit_exact("x16_avxvnni_int8", "avx2 + fma + f16c + avx-vnni", ms);
}

// The AVX-512 VNNI tile on ymm (EVEX vpdpbusd, 32 registers): every remainder of its 6-row GEMM
// tile up to M = 40, and the panel left over after its 4-panel GEMV groups.
TEST(MatMulNBitsKernels, YmmAvx512VnniBitExactOnDenseMGrid) {
  std::vector<int64_t> ms;
  for (int64_t M = 1; M <= 40; M += (M < 12 ? 1 : 7)) ms.push_back(M);
  dense_grid_bit_exact("x16_ymm_avx512vnni_int8", "avx512f/bw/vl/dq + avx512vnni", ms);
}

// Every micro-kernel the measured choice may pick (x16_int8_alternatives: other sets' kernels on a
// set's packed format, and the VNNI GEMMs on int5 / int6 panels widened to int8) gives the
// reference's bits, on every format the AVX2 set packs: int4 / int8 codes with and without zero
// points, block mins, fp16 scales, int5, int6 and lut4 panels, super-block scales; M from 1 past the
// tiles.
TEST(MatMulNBitsKernels, EveryChoiceCandidateBitExact) {
  ThreadPool pool(2);
  std::mt19937 rng(515);
  struct Case {
    int bits, block;
    int64_t K;
    bool asym, mins;
    int span_bits, code_lo;
    bool int5, int6, super, fp16, lut4 = false;
  };
  // MXFP4's levels as 8-bit codes (15 values spanning 25), a set of 16 spanning 32 (both unsigned
  // tables), IQ4_NL's levels + 128 and a set with both ends of the int8 range (signed tables).
  const std::vector<int> fp4 = {116, 120, 122, 124, 125, 126, 127, 128, 129, 130, 131, 132, 134, 136, 140},
                         wide16 = {100, 101, 103, 104, 106, 108, 110, 111,
                                   113, 116, 119, 121, 124, 126, 130, 131},
                         iq4 = {1, 24, 45, 63, 79, 93, 106, 118, 129, 141, 153, 166, 181, 197, 217, 241},
                         ends = {0, 1, 64, 127, 128, 129, 200, 254, 255},
                         iq2 = {85, 103, 120, 136, 153, 171};  // 128 +- {8, 25, 43}: a 7-bit span
  const Case cases[] = {
      {4, 32, 32 * 7 + 5, false, false, 8, 0, false, false, false, false},
      {4, 32, 32 * 7 + 5, true, false, 8, 0, false, false, false, true},
      {4, 64, 64 * 3 + 1, false, true, 8, 0, false, false, false, false},
      {4, 32, 32 * 4 + 9, true, true, 8, 0, false, false, false, false},  // zero points and mins: AVX2 only
      {8, 32, 32 * 5 + 3, false, false, 8, 0, false, false, false, true},
      {8, 16, 16 * 9 + 7, true, false, 8, 0, false, false, false, false},
      {8, 32, 32 * 6 + 9, false, false, 5, 112, true, false, false, true},  // int5 (GGUF Q5_0)
      {8, 64, 64 * 3 + 33, true, false, 5, 100, true, false, false, false},
      {8, 16, 16 * 11 + 3, false, false, 6, 96, false, true, false, false},  // int6 (Q6_K)
      {8, 32, 32 * 4 + 17, false, false, 6, 64, false, true, false, true},
      {8, 32, 32 * 5 + 1, false, false, 7, 64, false, false, false, false},  // a 7-bit span
      // Super-block scales (GGUF's K-quants): Q4_K with mins, Q6_K as int6, Q5_K-like int5 with mins.
      {4, 32, 256 * 2 + 32 * 3 + 5, false, true, 8, 0, false, false, true, false},
      {4, 64, 256 * 2 + 64 + 9, false, true, 8, 0, false, false, true, false},  // 4 blocks a super-block
      {4, 32, 256 + 32 * 5 + 3, true, false, 8, 0, false, false, true, false},  // zero points, no mins
      {8, 16, 256 + 16 * 5 + 7, false, false, 6, 96, false, true, true, false},
      {8, 32, 256 + 32 * 2 + 11, false, true, 5, 0, true, false, true, false},
      // lut4 (GGUF MXFP4 / NVFP4, IQ types; never with stored zero points): super-block scales, fp16,
      // fp32 with mins.
      {8, 32, 256 * 2 + 32 * 3 + 7, false, false, 8, 0, true, false, true, false, true},
      {8, 16, 16 * 9 + 5, false, false, 8, 0, false, false, false, true, true},
      {8, 64, 64 * 3 + 21, false, true, 8, 0, true, false, false, false, true},
      {8, 32, 256 * 2 + 32 * 3 + 7, false, false, 8, 1, true, false, true, false, true},  // IQ4_XS-like
      {8, 16, 16 * 7 + 3, false, true, 8, 1, false, false, false, true, true},
      {8, 32, 32 * 5 + 13, false, false, 8, 2, false, false, false, false, true},  // the int8 range's ends
      {8, 32, 256 + 32 * 3 + 19, false, false, 8, 3, true, false, true, false, true},  // IQ2_XXS-like
      {8, 16, 16 * 5 + 9, false, true, 8, 3, false, false, false, true, true},
  };
  int checked = 0;
  for (const Case& c : cases) {
    RandomWeight rw(c.bits, c.block, c.K, 16 * 13 + 5, c.asym, rng, c.span_bits, c.code_lo);
    if (c.mins) rw.add_mins(false, rng);
    if (c.super) rw.make_super(rng, c.bits == 4 ? 0 : -128, c.bits == 4 ? 63 : 127, 0, 63);
    if (c.lut4)
      rw.use_levels(c.code_lo == 1   ? iq4
                    : c.code_lo == 2 ? ends
                    : c.code_lo == 3 ? iq2
                    : c.mins         ? wide16
                                     : fp4,
                    rng);
    const bool fold = !c.asym;
    const quant::PackedX16 probe =
        quant::pack_x16(rw.w, c.fp16, {}, nullptr, fold, c.int5, c.super, c.int6, c.lut4);
    ASSERT_EQ(probe.super_blocks > 0, c.super);
    ASSERT_EQ(probe.lut4, c.lut4);
    const auto alts = x16_int8_alternatives(probe);
    for (size_t a = 0; a < alts.size(); ++a)
      for (const int64_t M : {1, 2, 3, 4, 5, 7, 8, 13, 16, 17, 40}) {
        const std::vector<float> A = random_a(M, c.K, rng);
        std::vector<float> want(static_cast<size_t>(M * rw.w.N)), got(want.size(), NAN);
        const Fp16Rounded rounded(rw.w);
        matmul_nbits_ref_int8(c.fp16 ? rounded.w : rw.w, A.data(), M, want.data(), nullptr);
        auto packed = make_panel_int8(
            quant::pack_x16(rw.w, c.fp16, {}, nullptr, fold, c.int5, c.super, c.int6, c.lut4), alts[a]);
        packed->run(A.data(), M, got.data(), nullptr, pool);
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_EQ(got[i], want[i]) << packed->kernel_name(M) << " bits " << probe.bits << " block "
                                     << c.block << " M=" << M << " at " << i;
        ++checked;
      }
  }
  const CpuFeatures& cpu = cpu_features();
  if (!(cpu.avx2 && cpu.fma && cpu.f16c) && !cpu.neon) GTEST_SKIP() << "no x16 int8 set on this CPU";
  EXPECT_GT(checked, 0);
}

// Every int8 panel kernel set on int8 weights of at most 16 distinct codes and no zero points (the
// GGUF table types: MXFP4's levels, IQ4_NL's, both ends of the int8 range): the sets that pack them
// as lut4 (AVX2; NEON / dotprod / i8mm: q4lx16, TBL; RVV q4ln16 and IME q4lt16, vrgather) and the
// others give the reference's bits (x16, t16) or stay within its int8 bound (n16: fused
// multiply-adds), fp32 and fp16 scales, M from 1 past the tiles, odd K, N not a multiple of the panel.
TEST(MatMulNBitsKernels, EverySetBitExactOnLut4Weights) {
  const CpuFeatures& cpu = cpu_features();
  std::mt19937 rng(616);
  const std::vector<std::vector<int>> tables = {
      {116, 120, 122, 124, 125, 126, 127, 128, 129, 130, 131, 132, 134, 136, 140},
      {1, 24, 45, 63, 79, 93, 106, 118, 129, 141, 153, 166, 181, 197, 217, 241},
      {0, 1, 64, 127, 128, 129, 200, 254, 255}};
  ThreadPool pool1(1), pool2(2);
  int checked = 0, lut4 = 0;
  for (size_t t = 0; t < tables.size(); ++t)
    for (int block : {16, 32, 64}) {
      const int64_t K = block * 5 + 3 + 8 * static_cast<int64_t>(t), N = 16 * 7 + 5;
      RandomWeight rw(8, block, K, N, false, rng);
      rw.use_levels(tables[t], rng);
      const Fp16Rounded rounded(rw.w);
      for (const auto& k : matmul_nbits_kernels()) {
        const std::string set = k.name;
        const bool exact = set.rfind("x16_", 0) == 0 || set.rfind("t16_", 0) == 0;
        if (k.compute != Compute::kInt8 || !(exact || set.rfind("n16_", 0) == 0) || !k.supports(rw.w, cpu))
          continue;
        for (bool fp16 : {false, true}) {
          auto packed = pack_kernel(k, rw.w, scales_opts(fp16));
          if (std::string(packed->kernel_name(1)).find("q4l") != std::string::npos) ++lut4;
          for (const int64_t M : {1, 2, 3, 4, 5, 7, 9, 16, 17, 33}) {
            const std::vector<float> A = random_a(M, K, rng);
            std::vector<float> want(static_cast<size_t>(M * N)), y1(want.size(), NAN), y2(want.size(), NAN);
            matmul_nbits_ref_int8(fp16 ? rounded.w : rw.w, A.data(), M, want.data(), nullptr);
            packed->run(A.data(), M, y1.data(), nullptr, pool1);
            packed->run(A.data(), M, y2.data(), nullptr, pool2);
            if (!exact) {
              const std::vector<double> tol = int8_bounds(fp16 ? rounded.w : rw.w, A, M, nullptr);
              for (size_t i = 0; i < want.size(); ++i)
                ASSERT_LE(std::fabs(static_cast<double>(y1[i]) - want[i]), tol[i])
                    << set << " via " << packed->kernel_name(M) << " table " << t << " M=" << M << " at "
                    << i;
              ASSERT_EQ(0, std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float))) << "threads 1 vs 2";
              ++checked;
              continue;
            }
            for (size_t i = 0; i < want.size(); ++i) {
              ASSERT_EQ(y1[i], want[i])
                  << k.name << " via " << packed->kernel_name(M) << " table " << t << " block " << block
                  << " M=" << M << (fp16 ? " fp16" : " fp32") << " at " << i;
              ASSERT_EQ(y2[i], want[i]) << k.name << " 2 threads via " << packed->kernel_name(M);
            }
            ++checked;
          }
        }
      }
    }
  if (!(cpu.avx2 && cpu.fma && cpu.f16c) && !cpu.neon && !cpu.rvv)
    GTEST_SKIP() << "no panel int8 set on this CPU";
  EXPECT_GT(checked, 0);
  // Every set that reads lut4 packs these weights as lut4 (NBITS_LUT4=0: none does).
  const char* env = std::getenv("NBITS_LUT4");
  if (env == nullptr || std::string(env) != "0") {
    EXPECT_GT(lut4, 0) << "no set packed lut4";
  }
}

// lut4 takes int8 weights of at most 16 distinct codes (ahead of int5): 17 codes stay int5; the
// table holds the codes ascending; a table within 32 values is read unsigned, a wider one signed.
TEST(MatMulNBitsKernels, Lut4ForAtMostSixteenCodes) {
  std::mt19937 rng(77);
  std::vector<int> levels;
  for (int i = 0; i < 17; ++i) levels.push_back(110 + i);
  RandomWeight rw(8, 32, 32 * 4, 16 * 3, false, rng);
  rw.use_levels(levels, rng);  // 17 codes
  EXPECT_FALSE(quant::pack_x16(rw.w, false, {}, nullptr, true, true, false, false, true).lut4);
  EXPECT_EQ(quant::pack_x16(rw.w, false, {}, nullptr, true, true, false, false, true).bits, 5);
  levels.pop_back();
  levels.back() = 250;  // 16 codes spanning 141
  rw.use_levels(levels, rng);
  const quant::PackedX16 wide = quant::pack_x16(rw.w, false, {}, nullptr, true, true, false, false, true);
  EXPECT_TRUE(wide.lut4);
  EXPECT_EQ(wide.code_span_bits(), 8);
  levels.back() = 141;  // spanning 32
  rw.use_levels(levels, rng);
  const quant::PackedX16 p = quant::pack_x16(rw.w, false, {}, nullptr, true, true, false, false, true);
  ASSERT_TRUE(p.lut4);
  EXPECT_EQ(p.bits, 4);
  EXPECT_EQ(p.code_lo, 110);
  EXPECT_EQ(p.code_hi, 141);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(p.lut[i], levels[static_cast<size_t>(i)]);
  EXPECT_EQ(p.default_zp(), 128);
  EXPECT_FALSE(p.plain());
  // Not asked: int5.
  EXPECT_FALSE(quant::pack_x16(rw.w, false, {}, nullptr, true, true, false, false, false).lut4);
  // Zero points that differ (kept): not lut4, whose kernels have no zero-point term.
  RandomWeight asym(8, 32, 32 * 4, 16 * 3, true, rng);
  asym.use_levels(levels, rng);
  EXPECT_FALSE(quant::pack_x16(asym.w, false, {}, nullptr, true, true, false, false, true).lut4);
}

// The AMX set: 16-row tiles with and without the rows past them (which run on the VNNI tile),
// M below one tile (VNNI only), and blocks over 64 (several tile products per block).
TEST(MatMulNBitsKernels, AmxBitExactOnDenseMGrid) {
  dense_grid_bit_exact("x16_amx_int8",
                       "amx-tile + amx-int8 (with the kernel's tile-data permission) and avx512vnni",
                       {1, 2, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65});
}

}  // namespace
}  // namespace nbits::kernels
