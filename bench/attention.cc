// GroupQueryAttention's attention for one layer of the Qwen2.5-0.5B shape (14 query heads, 2 kv
// heads, head 64, fp32 cache), one thread: the per-position attend_group path ("group", what the op
// ran before the tile kernel) against the flash-style tile kernel ("tile", kernels::attend_rows),
// the way the op calls them. prefill/S: causal attention of S new tokens (time per layer); decode/n:
// one token against n cached keys, the caches of 24 layers rotated so K/V stream from memory.
//
//   build-*/bench/bench_attention --benchmark_repetitions=5
//     --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true
#include "kernels/attention.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace nbits::kernels {
namespace {

constexpr int64_t kNq = 14, kNkv = 2, kH = 64, kG = kNq / kNkv;

std::vector<float> rand_vec(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

AttentionParams params() {
  AttentionParams p;
  p.head_size = kH;
  p.scale = 1.0f / std::sqrt(static_cast<float>(kH));
  return p;
}

// q/out: [S][Nq][H]; K/V: [Nkv][L][H] with the S new rows at [past, past + S).
struct Layer {
  int64_t S, L;
  std::vector<float> q, out, K, V;
  Layer(int64_t s, int64_t l, uint32_t seed)
      : S(s),
        L(l),
        q(rand_vec(s * kNq * kH, seed)),
        out(s * kNq * kH),
        K(rand_vec(kNkv * l * kH, seed + 1)),
        V(rand_vec(kNkv * l * kH, seed + 2)) {}
};

void run_group(Layer& x, int64_t past, std::vector<float>& scratch) {
  const AttentionParams p = params();
  for (int64_t s = 0; s < x.S; ++s)
    for (int64_t kvh = 0; kvh < kNkv; ++kvh) {
      const int64_t n = past + s + 1, row = (s * kNq + kvh * kG) * kH;
      attend_group(x.q.data() + row, kH, kG, x.K.data() + kvh * x.L * kH, x.V.data() + kvh * x.L * kH, n, p,
                   scratch.data(), x.out.data() + row, kH);
    }
}

void run_tile(Layer& x, int64_t past) {
  const AttentionParams p = params();
  const int64_t sq = std::max<int64_t>(1, attention_tile_rows() / kG);
  const float* q[kAttentionMaxTileRows];
  float* out[kAttentionMaxTileRows];
  int64_t lo[kAttentionMaxTileRows], hi[kAttentionMaxTileRows];
  for (int64_t kvh = 0; kvh < kNkv; ++kvh)
    for (int64_t s0 = 0; s0 < x.S; s0 += sq) {
      int64_t n = 0;
      for (int64_t s = s0; s < std::min(x.S, s0 + sq); ++s)
        for (int64_t h = kvh * kG; h < (kvh + 1) * kG; ++h, ++n) {
          q[n] = x.q.data() + (s * kNq + h) * kH;
          out[n] = x.out.data() + (s * kNq + h) * kH;
          lo[n] = 0;
          hi[n] = past + s + 1;
        }
      attend_rows(AttentionRows{q, out, lo, hi, n}, x.K.data() + kvh * x.L * kH, x.V.data() + kvh * x.L * kH,
                  p);
    }
}

void BM_prefill(benchmark::State& st, bool tile) {
  const int64_t S = st.range(0);
  Layer x(S, S, 1);
  std::vector<float> scratch(kG * S);
  for (auto _ : st) {
    if (tile)
      run_tile(x, 0);
    else
      run_group(x, 0, scratch);
    benchmark::DoNotOptimize(x.out.data());
  }
  st.counters["tok/s"] =
      benchmark::Counter(static_cast<double>(S), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_decode(benchmark::State& st, bool tile) {
  const int64_t n = st.range(0);
  std::vector<Layer> layers;
  for (int i = 0; i < 24; ++i) layers.emplace_back(1, n, 10 + 3 * i);
  std::vector<float> scratch(kG * n);
  size_t i = 0;
  for (auto _ : st) {
    Layer& x = layers[i++ % layers.size()];
    if (tile)
      run_tile(x, n - 1);
    else
      run_group(x, n - 1, scratch);
    benchmark::DoNotOptimize(x.out.data());
  }
  st.counters["KV GB/s"] = benchmark::Counter(static_cast<double>(2 * kNkv * n * kH * sizeof(float)),
                                              benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK_CAPTURE(BM_prefill, group, false)->Arg(128)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_prefill, tile, true)->Arg(128)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_decode, group, false)->Arg(1)->Arg(1024)->Arg(4096)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_decode, tile, true)->Arg(1)->Arg(1024)->Arg(4096)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace nbits::kernels

BENCHMARK_MAIN();
