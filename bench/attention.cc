// GroupQueryAttention's attention for one layer of the Qwen2.5-0.5B shape (14 query heads, 2 kv
// heads, head 64, fp32 cache), one thread: the per-position attend_group path ("group", what the op
// ran before the tile kernel, and for one-position decode until the keys kernel) against the
// flash-style tile kernel ("tile", kernels::attend_rows) and, for decode, the kernel with the keys
// across the lanes ("keys", kernels::attend_decode), the way the op calls them ("tile_whole": whole
// positions per tile, the op's grouping before the flat one). prefill/S: causal
// attention of S new tokens (time per layer); decode/n: one token against n cached keys, the caches
// of 24 layers rotated so K/V stream from memory; decode_f16/n, decode_q8/n: the same over an fp16
// and an int8 (--kv-cache q8) cache;
// decode_hot/n: one layer's cache, in L2 (the kernel's compute).
//
//   build-*/bench/bench_attention --benchmark_repetitions=5
//     --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true
#include "kernels/attention.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <new>
#include <random>
#include <type_traits>
#include <vector>

#include "base/fp16.h"

namespace nbits::kernels {
namespace {

constexpr int64_t kNq = 14, kNkv = 2, kH = 64, kG = kNq / kNkv;

// 64-byte aligned, as the generator's KV cache is (glibc's own large blocks are 16 bytes past a page,
// and every 64-byte row load would straddle two cache lines).
template <typename T>
struct Aligned64 {
  using value_type = T;
  Aligned64() = default;
  template <typename U>
  Aligned64(const Aligned64<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(64))); }
  void deallocate(T* p, size_t) { ::operator delete(p, std::align_val_t(64)); }
  bool operator==(const Aligned64&) const { return true; }
};
using Floats = std::vector<float, Aligned64<float>>;

Floats rand_vec(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  Floats v(n);
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
  Floats q, out, K, V;
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

// The tile kernel as the op calls it: a kv head's rows (position-major, then head) cut into whole
// tiles, which may end inside a position (flat); whole = false: whole positions per tile (7 heads x
// 4 positions = 28 of AVX-512's 32 rows), the op's grouping before.
void run_tile(Layer& x, int64_t past, bool whole = false) {
  const AttentionParams p = params();
  const int64_t tile = whole ? std::max<int64_t>(1, attention_tile_rows() / kG) * kG : attention_tile_rows();
  const float* q[kAttentionMaxTileRows];
  float* out[kAttentionMaxTileRows];
  int64_t lo[kAttentionMaxTileRows], hi[kAttentionMaxTileRows];
  for (int64_t kvh = 0; kvh < kNkv; ++kvh)
    for (int64_t f0 = 0; f0 < x.S * kG; f0 += tile) {
      int64_t n = 0;
      for (int64_t f = f0; f < std::min(x.S * kG, f0 + tile); ++f, ++n) {
        const int64_t s = f / kG, h = kvh * kG + f % kG;
        q[n] = x.q.data() + (s * kNq + h) * kH;
        out[n] = x.out.data() + (s * kNq + h) * kH;
        lo[n] = 0;
        hi[n] = past + s + 1;
      }
      attend_rows(AttentionRows{q, out, lo, hi, n}, x.K.data() + kvh * x.L * kH, x.V.data() + kvh * x.L * kH,
                  p);
    }
}

// One position: the decode kernel with the keys across the lanes (kernels::attend_decode).
void run_keys(Layer& x, int64_t past) {
  const AttentionParams p = params();
  for (int64_t kvh = 0; kvh < kNkv; ++kvh) {
    const int64_t row = kvh * kG * kH;
    attend_decode(x.q.data() + row, kH, kG, x.K.data() + kvh * x.L * kH, x.V.data() + kvh * x.L * kH,
                  past + 1, p, x.out.data() + row, kH);
  }
}

enum class Kernel { kGroup, kTile, kKeys };

enum class Prefill { kGroup, kTile, kTileWhole };

void BM_prefill(benchmark::State& st, Prefill kernel) {
  const int64_t S = st.range(0);
  Layer x(S, S, 1);
  std::vector<float> scratch(kG * S);
  for (auto _ : st) {
    if (kernel == Prefill::kGroup)
      run_group(x, 0, scratch);
    else
      run_tile(x, 0, kernel == Prefill::kTileWhole);
    benchmark::DoNotOptimize(x.out.data());
  }
  st.counters["tok/s"] =
      benchmark::Counter(static_cast<double>(S), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_decode(benchmark::State& st, Kernel kernel) {
  const int64_t n = st.range(0);
  std::vector<Layer> layers;
  for (int i = 0; i < 24; ++i) layers.emplace_back(1, n, 10 + 3 * i);
  std::vector<float> scratch(kG * n);
  size_t i = 0;
  for (auto _ : st) {
    Layer& x = layers[i++ % layers.size()];
    if (kernel == Kernel::kTile)
      run_tile(x, n - 1);
    else if (kernel == Kernel::kKeys)
      run_keys(x, n - 1);
    else
      run_group(x, n - 1, scratch);
    benchmark::DoNotOptimize(x.out.data());
  }
  st.counters["KV GB/s"] = benchmark::Counter(static_cast<double>(2 * kNkv * n * kH * sizeof(float)),
                                              benchmark::Counter::kIsIterationInvariantRate);
}

// decode/n with an fp16 cache (--kv-cache f16): attend_group over the F16C row helpers ("group")
// against attend_decode widening a block at a time ("keys"); decode_q8/n the same over an int8 cache
// (--kv-cache q8, rows of 64 codes + a 4-byte scale, dequantized a block at a time). KV GB/s counts
// the cache's own bytes.
template <typename T>
struct CacheLayer {
  static constexpr int64_t kRow = std::is_same_v<T, int8_t> ? kv_q8_row_bytes(kH) : kH;  // T per row
  Floats q, out;
  std::vector<T, Aligned64<T>> K, V;
  CacheLayer(int64_t l, uint32_t seed)
      : q(rand_vec(kNq * kH, seed)), out(kNq * kH), K(kNkv * l * kRow), V(K.size()) {
    const Floats k = rand_vec(kNkv * l * kH, seed + 1), v = rand_vec(kNkv * l * kH, seed + 2);
    for (int64_t r = 0; r < kNkv * l; ++r) {
      if constexpr (std::is_same_v<T, int8_t>) {
        quantize_kv_q8_row(k.data() + r * kH, kH, K.data() + r * kRow);
        quantize_kv_q8_row(v.data() + r * kH, kH, V.data() + r * kRow);
      } else {
        for (int64_t i = 0; i < kH; ++i) {
          K[r * kH + i] = float_to_fp16(k[r * kH + i]);
          V[r * kH + i] = float_to_fp16(v[r * kH + i]);
        }
      }
    }
  }
};

template <typename T>
void decode_cache(benchmark::State& st, Kernel kernel) {
  const int64_t n = st.range(0), R = CacheLayer<T>::kRow;
  const AttentionParams p = params();
  std::vector<CacheLayer<T>> layers;
  for (int i = 0; i < 24; ++i) layers.emplace_back(n, 10 + 3 * i);
  std::vector<float> scratch(kG * n);
  size_t i = 0;
  for (auto _ : st) {
    CacheLayer<T>& x = layers[i++ % layers.size()];
    for (int64_t kvh = 0; kvh < kNkv; ++kvh) {
      const int64_t row = kvh * kG * kH;
      const T* K = x.K.data() + kvh * n * R;
      const T* V = x.V.data() + kvh * n * R;
      if (kernel == Kernel::kKeys)
        attend_decode(x.q.data() + row, kH, kG, K, V, n, p, x.out.data() + row, kH);
      else
        attend_group(x.q.data() + row, kH, kG, K, V, n, p, scratch.data(), x.out.data() + row, kH);
    }
    benchmark::DoNotOptimize(x.out.data());
  }
  st.counters["KV GB/s"] = benchmark::Counter(static_cast<double>(2 * kNkv * n * R * sizeof(T)),
                                              benchmark::Counter::kIsIterationInvariantRate);
}
void BM_decode_f16(benchmark::State& st, Kernel kernel) { decode_cache<uint16_t>(st, kernel); }
void BM_decode_q8(benchmark::State& st, Kernel kernel) { decode_cache<int8_t>(st, kernel); }

// The same with one layer's cache, read again every iteration (in L2 up to ~1500 keys): the
// kernel's compute, without the memory stream.
void BM_decode_hot(benchmark::State& st, Kernel kernel) {
  const int64_t n = st.range(0);
  Layer x(1, n, 10);
  std::vector<float> scratch(kG * n);
  for (auto _ : st) {
    if (kernel == Kernel::kTile)
      run_tile(x, n - 1);
    else if (kernel == Kernel::kKeys)
      run_keys(x, n - 1);
    else
      run_group(x, n - 1, scratch);
    benchmark::DoNotOptimize(x.out.data());
  }
  st.counters["KV GB/s"] = benchmark::Counter(static_cast<double>(2 * kNkv * n * kH * sizeof(float)),
                                              benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK_CAPTURE(BM_prefill, group, Prefill::kGroup)
    ->Arg(128)
    ->Arg(1024)
    ->Arg(2048)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_prefill, tile, Prefill::kTile)
    ->Arg(128)
    ->Arg(1024)
    ->Arg(2048)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_prefill, tile_whole, Prefill::kTileWhole)
    ->Arg(128)
    ->Arg(1024)
    ->Arg(2048)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_decode, group, Kernel::kGroup)
    ->Arg(1)
    ->Arg(1024)
    ->Arg(4096)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_decode, tile, Kernel::kTile)
    ->Arg(1)
    ->Arg(1024)
    ->Arg(4096)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_decode, keys, Kernel::kKeys)
    ->Arg(1)
    ->Arg(1024)
    ->Arg(4096)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_decode_f16, group, Kernel::kGroup)->Arg(4096)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_decode_f16, keys, Kernel::kKeys)->Arg(4096)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_decode_q8, group, Kernel::kGroup)->Arg(4096)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_decode_q8, keys, Kernel::kKeys)->Arg(4096)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_decode_hot, group, Kernel::kGroup)->Arg(64)->Arg(1024)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_decode_hot, tile, Kernel::kTile)->Arg(1024)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_decode_hot, keys, Kernel::kKeys)->Arg(64)->Arg(1024)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace nbits::kernels

BENCHMARK_MAIN();
