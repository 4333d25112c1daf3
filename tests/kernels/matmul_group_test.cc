// kernels::MatMulGroup (kernels/matmul_group.h): several weights on one A give bitwise what
// running each weight alone gives, for every kernel set this CPU runs, CompInt8 and CompFp32
// (packed by the set itself) and for the dispatched one, on shapes with K not a multiple of the block, N not
// a multiple of the 16-column panel, M from 1 to 40, bits 4 and 8, with and without zero points, at 1 and 2
// threads; and the gate/up form equals the two products followed by vec_silu_mul.
#include "kernels/matmul_group.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/vector_ops.h"

namespace nbits::kernels {
namespace {

// A weight of random codes, scales and (optionally) zero points; owns its bytes.
struct Weight {
  std::vector<uint8_t> codes, zp;
  std::vector<float> scales;
  QuantizedMatrix w;
};

Weight make_weight(int bits, int block, int64_t K, int64_t N, bool zero_points, std::mt19937& rng) {
  Weight r;
  r.w = QuantizedMatrix{.N = N, .K = K, .bits = bits, .block_size = block};
  r.codes.resize(static_cast<size_t>(N * r.w.k_blocks() * r.w.blob_bytes()));
  for (uint8_t& c : r.codes) c = static_cast<uint8_t>(rng() & 0xff);
  std::uniform_real_distribution<float> scale(0.001f, 0.03f);
  r.scales.resize(static_cast<size_t>(N * r.w.k_blocks()));
  for (float& s : r.scales) s = scale(rng);
  if (zero_points) {
    r.zp.resize(static_cast<size_t>(N * r.w.zp_row_bytes()));
    for (uint8_t& z : r.zp) z = static_cast<uint8_t>(rng() & 0xff);
  }
  r.w.codes = r.codes.data();
  r.w.scales = r.scales.data();
  r.w.zero_points = zero_points ? r.zp.data() : nullptr;
  return r;
}

std::vector<float> activations(int64_t M, int64_t K, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 1.5f);
  std::vector<float> a(static_cast<size_t>(M * K));
  for (float& v : a) v = d(rng);
  return a;
}

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

struct Case {
  int bits, block;
  int64_t K;
  std::vector<int64_t> widths;
  bool zero_points;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {4, 32, 896, {64, 16, 16}, false},  // q/k/v-like, whole panels
      {4, 32, 77, {40, 23, 9}, true},     // odd K, partial panels
      {4, 16, 100, {33, 70}, false},      // K not a multiple of the block
      {8, 32, 200, {50, 17, 31}, true},  {8, 128, 300, {130, 48}, false}, {4, 128, 250, {24, 24}, true},
  };
  return c;
}

// The kernel sets to pack with: every entry of `compute` supporting `w` here, and the dispatch.
std::vector<const MatMulNBitsKernel*> sets_for(const QuantizedMatrix& w, Compute compute) {
  std::vector<const MatMulNBitsKernel*> r;
  for (const MatMulNBitsKernel& k : matmul_nbits_kernels())
    if (k.compute == compute && k.supports(w, cpu_features())) r.push_back(&k);
  r.push_back(nullptr);  // make_matmul_nbits
  return r;
}

std::unique_ptr<PackedMatMul> pack(const MatMulNBitsKernel* k, const QuantizedMatrix& w, Compute c) {
  return k != nullptr ? pack_kernel(*k, w) : make_matmul_nbits(w, c);
}

TEST(MatMulGroup, BitwiseSeparateRunsOnEverySet) {
  std::mt19937 rng(14);
  int shared_runs = 0;
  for (const Compute compute : {Compute::kInt8, Compute::kFp32})
    for (const Case& c : cases()) {
      std::vector<Weight> ws;
      for (int64_t n : c.widths) ws.push_back(make_weight(c.bits, c.block, c.K, n, c.zero_points, rng));
      std::vector<std::vector<float>> biases;
      for (int64_t n : c.widths) biases.push_back(activations(1, n, rng));
      for (const MatMulNBitsKernel* set : sets_for(ws[0].w, compute)) {
        const std::string name = std::string(set != nullptr ? set->name : "dispatch") +
                                 (compute == Compute::kInt8 ? " int8" : " fp32");
        std::vector<std::unique_ptr<PackedMatMul>> packed;
        std::vector<const PackedMatMul*> ptrs;
        for (const Weight& w : ws) {
          packed.push_back(pack(set, w.w, compute));
          ptrs.push_back(packed.back().get());
        }
        const MatMulGroup group(ptrs, c.widths);
#if defined(NBITS_ARCH_X86)
        if (set == nullptr && c.block == 32) {
          EXPECT_TRUE(group.shared()) << "the dispatched x86 x16 sets share A: " << name;
        }
#endif
        for (int threads : {1, 2}) {
          ThreadPool pool(threads);
          for (int64_t M : {1, 2, 3, 5, 17, 40}) {
            const std::vector<float> A = activations(M, c.K, rng);
            for (bool with_bias : {false, true}) {
              std::vector<std::vector<float>> want(ws.size()), got(ws.size());
              std::vector<float*> y;
              std::vector<const float*> b;
              for (size_t i = 0; i < ws.size(); ++i) {
                want[i].assign(static_cast<size_t>(M * c.widths[i]), -1.0f);
                got[i].assign(want[i].size(), -2.0f);
                const float* bias = with_bias ? biases[i].data() : nullptr;
                packed[i]->run(A.data(), M, want[i].data(), bias, pool);
                y.push_back(got[i].data());
                b.push_back(bias);
              }
              group.run(A.data(), M, y, b, pool);
              for (size_t i = 0; i < ws.size(); ++i)
                EXPECT_TRUE(same_bits(want[i], got[i]))
                    << name << " bits=" << c.bits << " block=" << c.block << " K=" << c.K
                    << " N=" << c.widths[i] << " M=" << M << " threads=" << threads << " bias=" << with_bias
                    << " weight " << i;
              shared_runs += group.shared();
            }
          }
        }
      }
    }
#if defined(NBITS_ARCH_X86)
  EXPECT_GT(shared_runs, 0);
#else
  EXPECT_EQ(shared_runs, 0);  // other ISAs run weight by weight (kernels/matmul_group.cc)
#endif
}

TEST(MatMulGroup, SiluMulEqualsProductsThenSiluMul) {
  std::mt19937 rng(4);
  for (const Case& c : cases()) {
    const int64_t N = c.widths[0] + 7;  // gate and up: one width
    Weight gate = make_weight(c.bits, c.block, c.K, N, c.zero_points, rng);
    Weight up = make_weight(c.bits, c.block, c.K, N, c.zero_points, rng);
    const std::vector<float> gate_bias = activations(1, N, rng), up_bias = activations(1, N, rng);
    for (Compute compute : {Compute::kInt8, Compute::kFp32}) {
      for (const MatMulNBitsKernel* set : sets_for(gate.w, compute)) {
        const std::string name = set != nullptr ? set->name : "dispatch";
        const auto pg = pack(set, gate.w, compute), pu = pack(set, up.w, compute);
        const MatMulGroup group({pg.get(), pu.get()}, {N, N});
        for (int threads : {1, 2}) {
          ThreadPool pool(threads);
          for (int64_t M : {1, 2, 4, 13, 40}) {
            const std::vector<float> A = activations(M, c.K, rng);
            for (bool with_bias : {false, true}) {
              const float* bg = with_bias ? gate_bias.data() : nullptr;
              const float* bu = with_bias ? up_bias.data() : nullptr;
              std::vector<float> g(static_cast<size_t>(M * N)), u(g.size()), want(g.size()),
                  got(g.size(), -3.0f);
              pg->run(A.data(), M, g.data(), bg, pool);
              pu->run(A.data(), M, u.data(), bu, pool);
              vec_silu_mul(g.data(), u.data(), want.data(), M * N);
              group.run_silu_mul(A.data(), M, got.data(), bg, bu, pool);
              EXPECT_TRUE(same_bits(want, got)) << name << " compute=" << (compute == Compute::kInt8 ? 8 : 32)
                                                << " bits=" << c.bits << " block=" << c.block << " K=" << c.K
                                                << " N=" << N << " M=" << M << " threads=" << threads;
            }
          }
        }
      }
    }
  }
}

// CompInt8 and CompFp32 weights prepare A differently: such a group runs weight by weight.
TEST(MatMulGroup, MixedComputeRunsWeightByWeight) {
  std::mt19937 rng(9);
  Weight a = make_weight(4, 32, 96, 40, true, rng), b = make_weight(4, 32, 96, 24, false, rng);
  const auto pa = make_matmul_nbits(a.w, Compute::kInt8), pb = make_matmul_nbits(b.w, Compute::kFp32);
  const MatMulGroup group({pa.get(), pb.get()}, {40, 24});
  EXPECT_FALSE(group.shared());
  ThreadPool pool(2);
  for (int64_t M : {1, 6}) {
    const std::vector<float> A = activations(M, 96, rng);
    std::vector<float> wa(static_cast<size_t>(M * 40)), wb(static_cast<size_t>(M * 24)), ga(wa.size()),
        gb(wb.size());
    pa->run(A.data(), M, wa.data(), nullptr, pool);
    pb->run(A.data(), M, wb.data(), nullptr, pool);
    float* y[2] = {ga.data(), gb.data()};
    const float* bias[2] = {nullptr, nullptr};
    group.run(A.data(), M, y, bias, pool);
    EXPECT_TRUE(same_bits(wa, ga));
    EXPECT_TRUE(same_bits(wb, gb));
  }
}

}  // namespace
}  // namespace nbits::kernels
