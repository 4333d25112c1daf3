// Super-block scales (quant::find_super_scales, PackedX16::super_blocks) and int6 codes: the x16
// formats in which GGUF's K-quants stream about the file's bytes (Q4_K: 4.625 bits a weight instead
// of 6; Q6_K: 6.5625, the file's), packed when PackOptions asks (super_scales, int6). The packer
// only takes super-block scales when every block scale (and min) is exactly an fp16 D times an
// int8, so the kernels that read them must give the scalar reference's bits; tested on the shapes
// of each K-quant (Q4_K / Q5_K with mins, Q6_K / Q3_K / IQ4_XS with signed multipliers, Q2_K),
// ragged K (a last super-block of fewer blocks, a last block past K), ragged N, M from 1 past
// the 4-row GEMM tile, 1 and 2 threads; and the fallback when one scale has no such form.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/fp16.h"
#include "kernels/matmul_nbits.h"
#include "kernels/ref/matmul_nbits_ref.h"
#include "quant/packed_x16.h"
#include "random_weight.h"

namespace nbits::kernels {
namespace {

using testing::random_a;
using testing::RandomWeight;

const MatMulNBitsKernel* avx2_set() {
  for (const auto& k : matmul_nbits_kernels())
    if (std::string(k.name) == "x16_avx2_int8") return &k;
  return nullptr;
}

PackOptions kquant_options(bool fp16 = false) {
  PackOptions o;
  o.fp16_scales = fp16;
  o.super_scales = true;
  o.int6 = true;
  return o;
}

bool says_super(const PackedMatMul& p, int64_t M) {
  return std::string(p.kernel_name(M)).find("16k_") != std::string::npos;
}

struct KQuant {
  const char* name;
  int bits, block;
  int span, code_lo;  // int8 codes in [code_lo, code_lo + 2^span) (span 8: any; int4: unused)
  bool mins;
  int lo, hi;  // the scales' multipliers
  const char* gemv;
};

// The K-quants as gguf/block_decode.h maps them.
const KQuant kQuants[] = {
    {"Q4_K", 4, 32, 4, 0, true, 0, 63, "qgemv_q4x16k_avx2"},
    {"Q5_K", 8, 32, 5, 128, true, 0, 63, "qgemv_q5x16k_avx2"},
    {"Q6_K", 8, 16, 6, 96, false, -128, 127, "qgemv_q6x16k_avx2"},
    {"Q2_K", 4, 16, 2, 0, true, 0, 15, "qgemv_q4x16k_avx2"},
    {"Q3_K", 4, 16, 3, 4, false, -32, 31, "qgemv_q4x16k_avx2"},
    {"IQ4_XS", 8, 32, 8, 1, false, -32, 31, "qgemv_q8x16k_avx2"},
};

RandomWeight kquant_weight(const KQuant& q, int64_t K, int64_t N, std::mt19937& rng, bool top) {
  RandomWeight rw(q.bits, q.block, K, N, false, rng, q.bits == 8 ? q.span : 8, q.code_lo);
  if (q.mins) rw.add_mins(/*zero_zp=*/true, rng);
  rw.make_super(rng, q.lo, q.hi, 0, 63, top);
  return rw;
}

TEST(SuperScales, FoundExactlyOnKQuantScales) {
  std::mt19937 rng(3);
  for (const KQuant& q : kQuants) {
    SCOPED_TRACE(q.name);
    for (bool top : {true, false}) {
      RandomWeight rw = kquant_weight(q, 256 * 3 + 96, 37, rng, top);
      const quant::SuperScales s = quant::find_super_scales(rw.w);
      ASSERT_TRUE(s.ok);
      EXPECT_EQ(s.blocks, 256 / q.block);
      const int64_t kb = rw.w.k_blocks();
      for (int64_t n = 0; n < rw.w.N; ++n)
        for (int64_t b = 0; b < kb; ++b) {
          const size_t i = static_cast<size_t>(n * kb + b),
                       j = static_cast<size_t>(n * s.supers + b / s.blocks);
          ASSERT_EQ(static_cast<float>(s.q[i]) * fp16_to_float(s.d[j]), rw.scales[i]) << n << " " << b;
          if (q.mins) {
            ASSERT_EQ(static_cast<float>(s.qm[i]) * fp16_to_float(s.dm[j]), rw.mins[i]);
          }
        }
    }
  }
}

TEST(SuperScales, RefusedWithoutAnExactForm) {
  std::mt19937 rng(4);
  const KQuant& q4k = kQuants[0];
  // Plain random fp32 scales (ONNX files), one scale nudged by an ulp, an fp32-only D, a NaN.
  RandomWeight plain(4, 32, 512, 40, false, rng);
  EXPECT_FALSE(quant::find_super_scales(plain.w).ok);
  for (int64_t at : {int64_t{0}, int64_t{16 * 16 + 3}, int64_t{39 * 16 + 15}}) {  // first panel, later, last
    RandomWeight rw = kquant_weight(q4k, 512, 40, rng, true);
    rw.scales[static_cast<size_t>(at)] = std::nextafter(rw.scales[static_cast<size_t>(at)], 1.0f);
    EXPECT_FALSE(quant::find_super_scales(rw.w).ok) << at;
  }
  RandomWeight fp32d = kquant_weight(q4k, 512, 16, rng, true);
  for (size_t i = 0; i < 16; ++i) fp32d.scales[i] = 63.0f * 1.00001f * (1 + i % 8);  // D not fp16
  EXPECT_FALSE(quant::find_super_scales(fp32d.w).ok);
  RandomWeight nan = kquant_weight(q4k, 512, 16, rng, true);
  nan.mins[5] = NAN;
  EXPECT_FALSE(quant::find_super_scales(nan.w).ok);
  // Blocks of 256 (one per super-block) and a single block: nothing to share.
  RandomWeight one(4, 256, 512, 16, false, rng);
  EXPECT_FALSE(quant::find_super_scales(one.w).ok);
  // All-zero scales are a valid run (D 0).
  RandomWeight zeros = kquant_weight(q4k, 512, 16, rng, true);
  std::fill(zeros.scales.begin(), zeros.scales.begin() + 8, 0.0f);
  EXPECT_TRUE(quant::find_super_scales(zeros.w).ok);
}

// Packed as super-block scales: the kernel names carry "16k_", the bytes are the format's, and
// every output is the reference's, bit for bit.
TEST(SuperScales, Avx2KernelsBitExactOnEveryKQuant) {
  const MatMulNBitsKernel* k = avx2_set();
  if (k == nullptr) GTEST_SKIP() << "x16_avx2_int8 is not built for this architecture";
  std::mt19937 rng(5);
  RandomWeight probe(4, 32, 64, 16, false, rng);
  if (!k->supports(probe.w, cpu_features())) GTEST_SKIP() << "needs avx2 + fma + f16c";
  ThreadPool one(1), two(2);
  for (const KQuant& q : kQuants)
    for (int64_t K : {int64_t{512}, int64_t{256 + 160}, int64_t{256 + 37}}) {
      const int64_t N = 53;
      RandomWeight rw = kquant_weight(q, K, N, rng, K != 512);
      std::vector<float> bias(static_cast<size_t>(N));
      for (auto& b : bias) b = std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng);
      for (bool fp16 : {false, true}) {  // fp16 asked: the exact super-block format still wins
        auto packed = k->pack_opts(rw.w, kquant_options(fp16));
        SCOPED_TRACE(std::string(q.name) + " K=" + std::to_string(K) + " via " + packed->kernel_name(1));
        EXPECT_EQ(std::string(packed->kernel_name(1)), q.gemv);
        const int64_t kb = rw.w.k_blocks(), supers = (kb * q.block + 255) / 256, panels = (N + 15) / 16;
        const int code_bits = q.bits == 4 ? 4 : q.span <= 5 && q.block % 32 == 0 ? 5 : q.span <= 6 ? 6 : 8;
        const size_t block_bytes = 16 + (q.mins ? 16 : 0) + 16 * static_cast<size_t>(q.block) * code_bits / 8;
        EXPECT_EQ(packed->packed_bytes(),
                  static_cast<size_t>(panels) * (supers * (q.mins ? 64 : 32) + kb * block_bytes));
        for (int64_t M : {1, 2, 3, 4, 5, 8, 17}) {
          EXPECT_TRUE(says_super(*packed, M)) << packed->kernel_name(M);
          const std::vector<float> A = random_a(M, K, rng);
          const float* bp = (M & 1) != 0 ? bias.data() : nullptr;
          std::vector<float> want(static_cast<size_t>(M * N)), y1(want.size(), NAN), y2(want.size(), NAN);
          matmul_nbits_ref_int8(rw.w, A.data(), M, want.data(), bp);
          packed->run(A.data(), M, y1.data(), bp, one);
          packed->run(A.data(), M, y2.data(), bp, two);
          for (size_t i = 0; i < want.size(); ++i) {
            ASSERT_EQ(y1[i], want[i]) << "M=" << M << " at m=" << i / N << " n=" << i % N;
            ASSERT_EQ(y2[i], want[i]) << "2 threads, M=" << M << " at " << i;
          }
        }
      }
    }
}

// One scale without the form: the whole matrix keeps per-block float scales, same results.
TEST(SuperScales, Avx2FallsBackToFloatScales) {
  const MatMulNBitsKernel* k = avx2_set();
  if (k == nullptr) GTEST_SKIP() << "x16_avx2_int8 is not built for this architecture";
  std::mt19937 rng(6);
  RandomWeight rw = kquant_weight(kQuants[0], 512, 40, rng, true);
  if (!k->supports(rw.w, cpu_features())) GTEST_SKIP() << "needs avx2 + fma + f16c";
  auto super = k->pack_opts(rw.w, kquant_options());
  EXPECT_FALSE(says_super(*k->pack(rw.w), 1));  // not asked
  rw.scales[20 * 16 + 2] *= 1.0000001f;
  auto plain = k->pack_opts(rw.w, kquant_options());
  EXPECT_TRUE(says_super(*super, 1));
  EXPECT_FALSE(says_super(*plain, 1)) << plain->kernel_name(1);
  EXPECT_EQ(std::string(plain->kernel_name(1)), "qgemv_q4x16_avx2");
  EXPECT_LT(super->packed_bytes() * 5, plain->packed_bytes() * 4);  // 4.625 + mins' 0.125 vs 6 bits
  ThreadPool pool(2);
  for (int64_t M : {1, 6}) {
    const std::vector<float> A = random_a(M, 512, rng);
    std::vector<float> want(static_cast<size_t>(M * 40)), y(want.size(), NAN);
    matmul_nbits_ref_int8(rw.w, A.data(), M, want.data(), nullptr);
    plain->run(A.data(), M, y.data(), nullptr, pool);
    EXPECT_EQ(0, std::memcmp(y.data(), want.data(), y.size() * sizeof(float))) << "M=" << M;
  }
}

}  // namespace
}  // namespace nbits::kernels
