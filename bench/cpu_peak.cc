// The core's clock and its int8 multiply-accumulate peak, so kernel throughput can be stated in
// MACs per cycle of the measured clock (perf counters are often missing in VMs):
//   build/bench/bench_cpu_peak --benchmark_repetitions=5 --benchmark_display_aggregates_only=true
// clock: a chain of dependent 64-bit register-register adds (one cycle each on every x86 core since
// P6; add-immediate chains would not do: Golden Cove folds them at rename), so adds per second =
// cycles per second under the load the benchmark puts on the core.
// vpdpbusd_zmm / vpdpbusd_ymm / maddubs_ymm: 12 independent accumulator chains of AVX-512 VNNI
// (64 MACs per instruction), AVX-VNNI (32) and the AVX2 vpmaddubsw + vpmaddwd + vpaddd triple
// (32 MACs); counters: GMAC/s (wall clock) and MAC/cycle at the clock the `clock` benchmark
// measured just before (run them in one process; a core that lowers its clock for wide vectors
// shows that as fewer MACs per scalar-clock cycle). vfmadd_zmm / vfmadd_ymm: the same for fp32
// FMA (one FMA = one MAC; GFLOP/s = 2 x GMAC/s). A set the CPU lacks reports an error row.
// tdpbssd: AMX-INT8, four 16 x 16 int32 C tiles accumulating K = 64 products (16384 MACs each) of
// two tiles loaded once, the tile unit's own peak. clock_amx: the add chain with one tdpbssd every
// 64 adds (a core that lowers its clock while the tile unit runs, or stalls the chain on tile
// instructions, shows it as fewer GHz than `clock`).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <string>

#if defined(__x86_64__)
#include <immintrin.h>

#include "base/cpu_features.h"
#include "kernels/x86/amx_tile_config.h"

namespace {

using nbits::kernels::AmxTileConfig;

double g_ghz = 0;  // the last `clock` measurement

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void bm_clock(benchmark::State& st) {
  constexpr int64_t kAdds = 1 << 24;
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : st) {
    uint64_t x = 0, y = 1;
    benchmark::DoNotOptimize(y);
    for (int64_t i = 0; i < kAdds; i += 8) {
      // Eight dependent adds per iteration; the asm keeps them as single adds on one register.
      __asm__ volatile(
          "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
          "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0"
          : "+r"(x)
          : "r"(y));
    }
    benchmark::DoNotOptimize(x);
  }
  g_ghz = static_cast<double>(kAdds) * static_cast<double>(st.iterations()) * 1e-9 / seconds_since(t0);
  st.counters["GHz"] = g_ghz;
}

constexpr int64_t kSteps = 1 << 20;

// Every tile 16 rows x 64 bytes (tiles 4 and 6 are the A and B operands).
__attribute__((target("amx-tile,amx-int8"))) void amx_begin() {
  AmxTileConfig c;
  for (int t = 0; t < 8; ++t) c.rows[t] = 16, c.colsb[t] = 64;
  _tile_loadconfig(&c);
  alignas(64) static int8_t ops[16 * 64] = {1};
  _tile_loadd(4, ops, 64);
  _tile_loadd(6, ops, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
}

__attribute__((target("amx-tile,amx-int8"))) void dpbssd_tiles(int32_t* out) {
  amx_begin();
  for (int64_t i = 0; i < kSteps / 16; ++i) {
    _tile_dpbssd(0, 4, 6);
    _tile_dpbssd(1, 4, 6);
    _tile_dpbssd(2, 4, 6);
    _tile_dpbssd(3, 4, 6);
  }
  alignas(64) int32_t c[16 * 16];
  _tile_stored(0, c, 64);
  _tile_release();
  *out = c[0];
}

__attribute__((target("amx-tile,amx-int8"))) void bm_clock_amx(benchmark::State& st) {
  if (!nbits::cpu_features().amx_int8) {
    st.SkipWithError("this CPU (or its OS) gives no AMX-INT8");
    return;
  }
  constexpr int64_t kAdds = 1 << 24;
  amx_begin();
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : st) {
    uint64_t x = 0, y = 1;
    benchmark::DoNotOptimize(y);
    for (int64_t i = 0; i < kAdds; i += 64) {
      for (int k = 0; k < 8; ++k)
        __asm__ volatile(
            "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
            "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0"
            : "+r"(x)
            : "r"(y));
      _tile_dpbssd(0, 4, 6);
    }
    benchmark::DoNotOptimize(x);
  }
  st.counters["GHz"] =
      static_cast<double>(kAdds) * static_cast<double>(st.iterations()) * 1e-9 / seconds_since(t0);
  _tile_release();
}

// Rates over wall-clock time (steady_clock around the whole timed loop).
void report(benchmark::State& st, double macs_per_step, double seconds) {
  const double gmacs =
      macs_per_step * static_cast<double>(kSteps) * static_cast<double>(st.iterations()) * 1e-9;
  st.counters["GMAC/s"] = gmacs / seconds;
  if (g_ghz > 0) st.counters["MAC/cycle"] = gmacs / seconds / g_ghz;
}

// Twelve accumulators as named variables (an array would live on the stack, and its
// store-to-load forwarding would join the chains); the empty asm keeps every step.
// The operands go through an empty asm each step too, so nothing is hoisted out of the loop.
#define NBITS_PEAK_LOOP(T, ZERO, STEP, KEEP)                                                           \
  T a0 = ZERO, a1 = ZERO, a2 = ZERO, a3 = ZERO, a4 = ZERO, a5 = ZERO, a6 = ZERO, a7 = ZERO, a8 = ZERO, \
    a9 = ZERO, a10 = ZERO, a11 = ZERO;                                                                 \
  for (int64_t i = 0; i < kSteps; ++i) {                                                               \
    __asm__ volatile("" : KEEP(u), KEEP(s));                                                           \
    a0 = STEP(a0), a1 = STEP(a1), a2 = STEP(a2), a3 = STEP(a3), a4 = STEP(a4), a5 = STEP(a5);          \
    a6 = STEP(a6), a7 = STEP(a7), a8 = STEP(a8), a9 = STEP(a9), a10 = STEP(a10), a11 = STEP(a11);      \
    __asm__ volatile(""                                                                                \
                     : KEEP(a0), KEEP(a1), KEEP(a2), KEEP(a3), KEEP(a4), KEEP(a5), KEEP(a6), KEEP(a7), \
                       KEEP(a8), KEEP(a9), KEEP(a10), KEEP(a11));                                      \
  }

// The twelve accumulators summed (so the loop's results are used).
#define NBITS_PEAK_SUM(ADD) \
  ADD(ADD(ADD(ADD(a0, a1), ADD(a2, a3)), ADD(ADD(a4, a5), ADD(a6, a7))), ADD(ADD(a8, a9), ADD(a10, a11)))

#define NBITS_KEEP_V(x) "+v"(x)
#define NBITS_KEEP_X(x) "+x"(x)

__attribute__((target("avx512f,avx512bw,avx512vnni"))) void dpbusd_zmm(int32_t* out) {
  __m512i u = _mm512_set1_epi8(3), s = _mm512_set1_epi8(-2);
#define STEP(a) _mm512_dpbusd_epi32(a, u, s)
  NBITS_PEAK_LOOP(__m512i, _mm512_setzero_si512(), STEP, NBITS_KEEP_V)
#undef STEP
  int32_t lanes[16];
  _mm512_storeu_si512(lanes, NBITS_PEAK_SUM(_mm512_add_epi32));
  *out = lanes[0];
}

__attribute__((target("avx2,avxvnni"))) void dpbusd_ymm(int32_t* out) {
  __m256i u = _mm256_set1_epi8(3), s = _mm256_set1_epi8(-2);
#define STEP(a) _mm256_dpbusd_avx_epi32(a, u, s)
  NBITS_PEAK_LOOP(__m256i, _mm256_setzero_si256(), STEP, NBITS_KEEP_X)
#undef STEP
  *out = _mm256_extract_epi32(NBITS_PEAK_SUM(_mm256_add_epi32), 0);
}

// The AVX2 int8 dot: vpmaddubsw (u8 x s8 -> s16 pairs), vpmaddwd with ones (-> s32), vpaddd.
// Each chain's products take its own accumulator as the unsigned operand, so the twelve are not
// one common subexpression; the and makes each chain 12 cycles long, so this row is a lower
// bound of the triple's throughput (latency-bound: at most 32 MAC/cycle with 12 chains).
__attribute__((target("avx2"))) void maddubs_ymm(int32_t* out) {
  __m256i u = _mm256_set1_epi8(3), s = _mm256_set1_epi8(-2);
  const __m256i ones = _mm256_set1_epi16(1);
#define STEP(a) _mm256_add_epi32(a, _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_and_si256(a, u), s), ones))
  NBITS_PEAK_LOOP(__m256i, _mm256_setzero_si256(), STEP, NBITS_KEEP_X)
#undef STEP
  *out = _mm256_extract_epi32(NBITS_PEAK_SUM(_mm256_add_epi32), 0);
}

// fp32 FMA (the CompFp32 kernels and attention): 12 chains of a = a * u + s, which stays near 1 (no
// subnormals); one FMA counts as one MAC.
__attribute__((target("avx512f"))) void fmadd_zmm(int32_t* out) {
  __m512 u = _mm512_set1_ps(0.999f), s = _mm512_set1_ps(0.001f);
#define STEP(a) _mm512_fmadd_ps(a, u, s)
  NBITS_PEAK_LOOP(__m512, _mm512_setzero_ps(), STEP, NBITS_KEEP_V)
#undef STEP
  float lanes[16];
  _mm512_storeu_ps(lanes, NBITS_PEAK_SUM(_mm512_add_ps));
  *out = static_cast<int32_t>(lanes[0]);
}

__attribute__((target("avx2,fma"))) void fmadd_ymm(int32_t* out) {
  __m256 u = _mm256_set1_ps(0.999f), s = _mm256_set1_ps(0.001f);
#define STEP(a) _mm256_fmadd_ps(a, u, s)
  NBITS_PEAK_LOOP(__m256, _mm256_setzero_ps(), STEP, NBITS_KEEP_X)
#undef STEP
  float lanes[8];
  _mm256_storeu_ps(lanes, NBITS_PEAK_SUM(_mm256_add_ps));
  *out = static_cast<int32_t>(lanes[0]);
}

void bm_peak(benchmark::State& st, void (*fn)(int32_t*), bool supported, const char* feature,
             double macs_per_step) {
  if (!supported) {
    st.SkipWithError((std::string("this CPU has no ") + feature).c_str());
    return;
  }
  int32_t out = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : st) {
    fn(&out);
    benchmark::DoNotOptimize(out);
  }
  report(st, macs_per_step, seconds_since(t0));
}

}  // namespace

BENCHMARK(bm_clock)->Name("clock")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_peak, vpdpbusd_zmm, dpbusd_zmm, __builtin_cpu_supports("avx512vnni") != 0, "avx512vnni",
                  12 * 64)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_peak, vpdpbusd_ymm, dpbusd_ymm, __builtin_cpu_supports("avxvnni") != 0, "avxvnni",
                  12 * 32)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_peak, maddubs_ymm, maddubs_ymm, __builtin_cpu_supports("avx2") != 0, "avx2", 12 * 32)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_peak, vfmadd_zmm, fmadd_zmm, __builtin_cpu_supports("avx512f") != 0, "avx512f", 12 * 16)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_peak, vfmadd_ymm, fmadd_ymm, __builtin_cpu_supports("fma") != 0, "fma", 12 * 8)
    ->Unit(benchmark::kMillisecond);
// kSteps / 16 steps of four 16384-MAC products: 4096 MACs per kSteps unit.
BENCHMARK_CAPTURE(bm_peak, tdpbssd, dpbssd_tiles, nbits::cpu_features().amx_int8,
                  "amx-int8 (with the OS's permission)", 4096)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(bm_clock_amx)->Name("clock_amx")->Unit(benchmark::kMillisecond);

#else

// Not an x86 core: nothing here measures its clock yet.
void bm_none(benchmark::State& st) { st.SkipWithError("bench_cpu_peak measures x86 cores only"); }
BENCHMARK(bm_none)->Name("cpu_peak");

#endif

BENCHMARK_MAIN();
