// Grouped MatMulNBits (kernels/matmul_group.h) against separate calls, Qwen2.5-0.5B shapes
// (K = 896): qkv = q 896 + k 128 + v 128 columns; gate_up = gate 4864 + up 4864 followed by
// silu(gate) * up (separate: two calls and vec_silu_mul split like the SiluMul op; grouped:
// MatMulGroup::run_silu_mul). int4, block 32, CompInt8 (accuracy_level 4), the dispatched
// kernel set. Copies of the weights rotate (>= 128 MB in all) so each call streams from DRAM,
// as in a decode step. Interleave repetitions on a shared machine:
//
//   build/bench/bench_matmul_group --benchmark_repetitions=9
//     --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true
//     --benchmark_filter=median   (or read the _median rows)
#include "kernels/matmul_group.h"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/vector_ops.h"

namespace nbits::kernels {
namespace {

constexpr int64_t kK = 896;
constexpr size_t kRotateBytes = size_t{128} << 20;

ThreadPool& pool(int threads) {
  static ThreadPool p1(1), p2(2);
  return threads == 1 ? p1 : p2;
}

// One packed copy of a layer's projections (the ONNX bytes are dropped after packing).
struct Copy {
  std::vector<std::unique_ptr<PackedMatMul>> packed;
  std::unique_ptr<MatMulGroup> group;
};

std::unique_ptr<PackedMatMul> random_weight(int64_t N, std::mt19937& rng) {
  QuantizedMatrix w;
  w.N = N;
  w.K = kK;
  w.bits = 4;
  w.block_size = 32;
  std::vector<uint8_t> codes(static_cast<size_t>(N * w.k_blocks() * w.blob_bytes()));
  for (uint8_t& c : codes) c = static_cast<uint8_t>(rng());
  std::vector<float> scales(static_cast<size_t>(N * w.k_blocks()));
  std::uniform_real_distribution<float> d(0.002f, 0.02f);
  for (float& s : scales) s = d(rng);
  w.codes = codes.data();
  w.scales = scales.data();
  return make_matmul_nbits(w, Compute::kInt8);
}

const std::vector<Copy>& copies(const std::vector<int64_t>& widths) {
  static std::vector<std::pair<std::vector<int64_t>, std::vector<Copy>>> cache;
  for (const auto& [w, c] : cache)
    if (w == widths) return c;
  std::mt19937 rng(7);
  std::vector<Copy> c;
  size_t bytes = 0;
  while (bytes < kRotateBytes) {
    Copy copy;
    std::vector<const PackedMatMul*> ptrs;
    for (int64_t n : widths) {
      copy.packed.push_back(random_weight(n, rng));
      ptrs.push_back(copy.packed.back().get());
      bytes += copy.packed.back()->packed_bytes();
    }
    copy.group = std::make_unique<MatMulGroup>(ptrs, widths);
    c.push_back(std::move(copy));
  }
  cache.emplace_back(widths, std::move(c));
  return cache.back().second;
}

enum class Shape { kQkv, kGateUp };

void run_case(benchmark::State& state, Shape shape, bool grouped) {
  const int64_t M = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  const std::vector<int64_t> widths =
      shape == Shape::kQkv ? std::vector<int64_t>{896, 128, 128} : std::vector<int64_t>{4864, 4864};
  const std::vector<Copy>& cs = copies(widths);
  ThreadPool& p = pool(threads);
  std::vector<float> A(static_cast<size_t>(M * kK));
  std::mt19937 rng(3);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (float& v : A) v = d(rng);
  std::vector<std::vector<float>> Y;
  for (int64_t n : widths) Y.emplace_back(static_cast<size_t>(M * n));
  std::vector<float*> y;
  for (auto& v : Y) y.push_back(v.data());
  const std::vector<const float*> bias(widths.size(), nullptr);
  std::vector<float> out(static_cast<size_t>(M * widths[0]));
  size_t i = 0, bytes = 0;
  for (auto _ : state) {
    const Copy& c = cs[i++ % cs.size()];
    if (shape == Shape::kGateUp) {
      if (grouped) {
        c.group->run_silu_mul(A.data(), M, out.data(), nullptr, nullptr, p);
      } else {
        c.packed[0]->run(A.data(), M, y[0], nullptr, p);
        c.packed[1]->run(A.data(), M, y[1], nullptr, p);
        const float* g = y[0];
        const float* u = y[1];
        float* o = out.data();
        p.parallel_range(M * widths[0], 8192,
                         [&](int64_t s, int64_t e) { vec_silu_mul(g + s, u + s, o + s, e - s); });
      }
    } else if (grouped) {
      c.group->run(A.data(), M, y, bias, p);
    } else {
      for (size_t j = 0; j < widths.size(); ++j) c.packed[j]->run(A.data(), M, y[j], nullptr, p);
    }
    for (const auto& w : c.packed) bytes += w->packed_bytes();
    benchmark::DoNotOptimize(out.data());
    benchmark::DoNotOptimize(y[0]);
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.SetLabel(std::string(cs[0].packed[0]->kernel_name(M)) +
                 (cs[0].group->shared() ? " shared" : " unshared"));
}

void args(benchmark::internal::Benchmark* b) {
  for (int64_t M : {1, 128})
    for (int64_t t : {1, 2}) b->Args({M, t});
  b->ArgNames({"M", "T"})->UseRealTime();
}

BENCHMARK_CAPTURE(run_case, qkv_separate, Shape::kQkv, false)->Apply(args);
BENCHMARK_CAPTURE(run_case, qkv_grouped, Shape::kQkv, true)->Apply(args);
BENCHMARK_CAPTURE(run_case, gate_up_silu_separate, Shape::kGateUp, false)->Apply(args);
BENCHMARK_CAPTURE(run_case, gate_up_silu_grouped, Shape::kGateUp, true)->Apply(args);

}  // namespace
}  // namespace nbits::kernels

BENCHMARK_MAIN();
