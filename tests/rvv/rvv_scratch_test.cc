// Activation scratch of the kernel sets with a PackOptions format (RISC-V IME/RVV, x86 x16) is
// per calling thread, not per matrix: after warm-up with the largest M, running any mix of
// matrices allocates nothing (tests/support/alloc_counter.cc replaces global operator new in
// this test binary and counts calls), and two threads running different matrices at once do
// not disturb each other.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kernels/matmul_nbits.h"
#include "support/alloc_counter.h"

namespace nbits::kernels {
namespace {

struct Matrix {
  QuantizedMatrix w;
  std::vector<uint8_t> codes, zp;
  std::vector<float> scales;
};

std::unique_ptr<Matrix> random_matrix(int64_t N, int64_t K, int bits, bool zp, std::mt19937& rng) {
  auto m = std::make_unique<Matrix>();
  m->w.N = N;
  m->w.K = K;
  m->w.bits = bits;
  m->w.block_size = 32;
  m->codes.resize(static_cast<size_t>(N * m->w.k_blocks() * m->w.blob_bytes()));
  for (auto& c : m->codes) c = static_cast<uint8_t>(rng());
  m->scales.resize(static_cast<size_t>(N * m->w.k_blocks()));
  for (auto& s : m->scales) s = 0.001f * static_cast<float>(1 + rng() % 50);
  if (zp) {
    m->zp.resize(static_cast<size_t>(N * m->w.zp_row_bytes()));
    for (auto& z : m->zp) z = static_cast<uint8_t>(rng());
  }
  m->w.codes = m->codes.data();
  m->w.scales = m->scales.data();
  m->w.zero_points = zp ? m->zp.data() : nullptr;
  return m;
}

struct Case {
  std::unique_ptr<PackedMatMul> packed;
  int64_t N, K;
};

// Matrices of different K (so different scratch sizes), bits and scale formats, packed by
// every kernel set that has a PackOptions format.
std::vector<Case> packed_cases(std::vector<std::unique_ptr<Matrix>>& keep) {
  std::mt19937 rng(3);
  std::vector<Case> cases;
  const int64_t shapes[3][2] = {{48, 200}, {20, 64}, {33, 96}};
  for (const MatMulNBitsKernel& k : matmul_nbits_kernels()) {
    if (k.pack_with == nullptr) continue;
    for (int i = 0; i < 3; ++i) {
      keep.push_back(random_matrix(shapes[i][0], shapes[i][1], i == 1 ? 8 : 4, i == 2, rng));
      if (!k.supports(keep.back()->w, cpu_features())) continue;
      PackOptions o;
      o.fp16_scales = i != 1;
      cases.push_back({k.pack_opts(keep.back()->w, o), shapes[i][0], shapes[i][1]});
    }
  }
  return cases;
}

TEST(KernelScratch, NoAllocationAfterWarmUp) {
  std::vector<std::unique_ptr<Matrix>> keep;
  std::vector<Case> cases = packed_cases(keep);
  if (cases.empty()) GTEST_SKIP() << "no kernel set with a PackOptions format on this CPU";
  ThreadPool pool(2);
  std::vector<float> A(7 * 200, 0.25f), Y(7 * 48);
  for (int64_t M : {7, 1})  // warm-up: the largest M, then decode
    for (const Case& c : cases) c.packed->run(A.data(), M, Y.data(), nullptr, pool);
  const int64_t before = testing::allocation_count();
  for (int64_t M : {1, 5, 1, 7, 2, 1})
    for (const Case& c : cases) c.packed->run(A.data(), M, Y.data(), nullptr, pool);
  EXPECT_EQ(testing::allocation_count() - before, 0)
      << "allocations after warm-up over " << cases.size() << " matrices";
}

TEST(KernelScratch, ThreadsRunningDifferentMatricesAgree) {
  std::vector<std::unique_ptr<Matrix>> keep;
  std::vector<Case> cases = packed_cases(keep);
  if (cases.size() < 2) GTEST_SKIP() << "no kernel set with a PackOptions format on this CPU";
  std::mt19937 rng(8);
  std::vector<float> A(4 * 200);
  for (auto& a : A) a = std::uniform_real_distribution<float>(-1, 1)(rng);
  ThreadPool pool(1);
  for (int64_t M : {1, 4}) {
    std::vector<std::vector<float>> want(cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
      want[i].assign(static_cast<size_t>(M * cases[i].N), 0.0f);
      cases[i].packed->run(A.data(), M, want[i].data(), nullptr, pool);
    }
    // Thread t runs matrices t, t+2, ... repeatedly while the other runs the rest.
    std::vector<std::vector<float>> got(cases.size());
    for (size_t i = 0; i < cases.size(); ++i) got[i].assign(want[i].size(), 0.0f);
    auto worker = [&](size_t t) {
      ThreadPool own(1);
      for (int rep = 0; rep < 3; ++rep)
        for (size_t i = t; i < cases.size(); i += 2)
          cases[i].packed->run(A.data(), M, got[i].data(), nullptr, own);
    };
    std::thread t0(worker, 0), t1(worker, 1);
    t0.join();
    t1.join();
    for (size_t i = 0; i < cases.size(); ++i)
      EXPECT_EQ(0, std::memcmp(want[i].data(), got[i].data(), want[i].size() * sizeof(float)))
          << cases[i].packed->kernel_name(M) << " M=" << M;
  }
}

}  // namespace
}  // namespace nbits::kernels
