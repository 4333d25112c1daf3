// What one block of the AMX GEMM (kernels/x86/qgemm_x16_amx.cc) costs, part by part: the loop of
// qgemm_x16_amx's tile16 over a Qwen2.5-0.5B mlp_up (K 896, N 4864, M 128, int4 block 32: 28
// blocks per 16 x 16 output tile, 304 panels x 8 row tiles), hot data, one thread, with each
// part switched on or off:
//   loads     the A tile (16 rows x 32 bytes) and the B tile (8 rows x 64 bytes) of the block
//   tdp       tile zero + tdpbssd (8192 MACs)
//   store     the C tile to its 1 KiB buffer (with tile zero, so it is written)
//   epilogue  acc += float(dot) * (sa * scale) for 16 rows x 16 columns from that buffer, two
//             blocks behind (the kernel's order and lag)
//   alu       the epilogue's vector arithmetic without its loads (constants in registers)
// Counter ns_per_block: time / blocks (cycles per block = ns x the clock of bench_cpu_peak).
// Sums that exceed the parts alone show which parts do not overlap on the core:
//   build/bench/bench_amx_parts --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
// GCC 12 reports _mm512_undefined_ps() inside _mm512_cvtepi32_ps as maybe-uninitialized: a false
// positive (as in kernels/x86/qgemm_x16_avx512vnni.cc).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>

#include "base/cpu_features.h"
#include "kernels/x86/amx_tile_config.h"

namespace {

using nbits::kernels::AmxTileConfig;

constexpr int kK = 896, kBlock = 32, kBlocks = kK / kBlock, kM = 128, kPanels = 304, kLd = 4864;
enum Part { kLoads = 1, kTdp = 2, kStore = 4, kEpilogue = 8, kAlu = 16 };

// C tiles 0..3, A tiles 4, 5 (16 x 32 bytes), B tiles 6, 7 (8 x 64 bytes): the kernel's layout.
__attribute__((target("amx-tile,amx-int8"))) void configure() {
  AmxTileConfig c;
  for (int t = 0; t < 4; ++t) c.rows[t] = 16, c.colsb[t] = 64;
  for (int t = 4; t < 6; ++t) c.rows[t] = 16, c.colsb[t] = kBlock;
  for (int t = 6; t < 8; ++t) c.rows[t] = kBlock / 4, c.colsb[t] = 64;
  _tile_loadconfig(&c);
}

struct Data {
  std::vector<int8_t> qa = std::vector<int8_t>(kM * kK), codes = std::vector<int8_t>(kK * 16);
  std::vector<float> sa = std::vector<float>(kM * kBlocks), scales = std::vector<float>(kBlocks * 16),
                     y = std::vector<float>(static_cast<size_t>(kM) * kLd);
  Data() {
    for (auto& v : qa) v = static_cast<int8_t>(std::rand() % 200 - 100);
    for (auto& v : codes) v = static_cast<int8_t>(std::rand() % 16 - 8);
    for (auto& v : sa) v = 0.01f * static_cast<float>(std::rand() % 100);
    for (auto& v : scales) v = 0.01f * static_cast<float>(std::rand() % 100);
  }
};

template <int kParts>
__attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512vl,avx512dq"), noinline)) void gemm(Data& d) {
  alignas(64) static int32_t cbuf[4][16][16];
  for (int p = 0; p < kPanels; ++p)
    for (int m = 0; m < kM; m += 16) {
      const int8_t* a = d.qa.data() + m * kK;
      __m512 acc[16];
      for (auto& x : acc) x = _mm512_setzero_ps();
      for (int b = 0, e = -2; e < kBlocks; ++b, ++e) {
        if (b < kBlocks) {
#define NBITS_PART_BLOCK(T, TA, TB)                             \
  if constexpr ((kParts & (kTdp | kStore)) != 0) _tile_zero(T); \
  if constexpr ((kParts & kLoads) != 0) {                       \
    _tile_loadd(TA, a + b * kBlock, kK);                        \
    _tile_loadd(TB, d.codes.data() + b * kBlock * 16, 64);      \
  }                                                             \
  if constexpr ((kParts & kTdp) != 0) _tile_dpbssd(T, TA, TB);  \
  if constexpr ((kParts & kStore) != 0) _tile_stored(T, cbuf[T], 64);
          switch (b & 3) {
            case 0:
              NBITS_PART_BLOCK(0, 4, 6)
              break;
            case 1:
              NBITS_PART_BLOCK(1, 5, 7)
              break;
            case 2:
              NBITS_PART_BLOCK(2, 4, 6)
              break;
            default:
              NBITS_PART_BLOCK(3, 5, 7)
              break;
          }
#undef NBITS_PART_BLOCK
        }
        if (e < 0) continue;
        if constexpr ((kParts & kEpilogue) != 0) {
          const __m512 sc = _mm512_loadu_ps(d.scales.data() + e * 16);
#pragma GCC unroll 16
          for (int r = 0; r < 16; ++r) {
            const __m512 s = _mm512_mul_ps(_mm512_set1_ps(d.sa[(m + r) * kBlocks + e]), sc);
            __m512 prod = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_load_si512(cbuf[e & 3][r])), s);
            __asm__("" : "+v"(prod));
            acc[r] = _mm512_add_ps(acc[r], prod);
          }
        }
        if constexpr ((kParts & kAlu) != 0) {
          const __m512 sc = _mm512_set1_ps(1.0001f * static_cast<float>(e));
          const __m512i dot = _mm512_set1_epi32(e);
#pragma GCC unroll 16
          for (int r = 0; r < 16; ++r) {
            const __m512 s = _mm512_mul_ps(_mm512_set1_ps(0.5f + static_cast<float>(r)), sc);
            __m512 prod = _mm512_mul_ps(_mm512_cvtepi32_ps(dot), s);
            __asm__("" : "+v"(prod));
            acc[r] = _mm512_add_ps(acc[r], prod);
          }
        }
      }
      for (int r = 0; r < 16; ++r) _mm512_storeu_ps(d.y.data() + (m + r) * kLd + p * 16, acc[r]);
    }
}

template <int kParts>
__attribute__((target("amx-tile,amx-int8"))) void bm_parts(benchmark::State& st) {
  if (!nbits::cpu_features().amx_int8) {
    st.SkipWithError("this CPU (or its OS) gives no AMX-INT8");
    return;
  }
  static Data d;
  configure();
  // Operands in every A and B tile, so the parts without loads multiply real data too.
  _tile_loadd(4, d.qa.data(), kK);
  _tile_loadd(5, d.qa.data(), kK);
  _tile_loadd(6, d.codes.data(), 64);
  _tile_loadd(7, d.codes.data(), 64);
  for (auto _ : st) {
    gemm<kParts>(d);
    benchmark::DoNotOptimize(d.y.data());
  }
  _tile_release();
  st.counters["ns_per_block"] =
      benchmark::Counter(static_cast<double>(kPanels) * (kM / 16) * kBlocks * 1e-9,
                         benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

BENCHMARK_TEMPLATE(bm_parts, 0)->Name("loop")->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(bm_parts, kLoads)->Name("loads")->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(bm_parts, kTdp)->Name("tdp")->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(bm_parts, kStore)->Name("store")->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(bm_parts, kEpilogue)->Name("epilogue")->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(bm_parts, kAlu)->Name("alu")->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(bm_parts, kLoads | kTdp)->Name("loads+tdp")->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(bm_parts, kLoads | kTdp | kStore)->Name("loads+tdp+store")->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(bm_parts, kTdp | kAlu)->Name("tdp+alu")->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(bm_parts, kTdp | kEpilogue)->Name("tdp+epilogue")->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(bm_parts, kLoads | kEpilogue)->Name("loads+epilogue")->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(bm_parts, kStore | kEpilogue)->Name("store+epilogue")->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(bm_parts, kLoads | kTdp | kStore | kAlu)
    ->Name("loads+tdp+store+alu")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(bm_parts, kLoads | kTdp | kStore | kEpilogue)->Name("all")->Unit(benchmark::kMicrosecond);

}  // namespace

#endif  // __x86_64__

BENCHMARK_MAIN();
