// MatMulNBits kernels: GB/s of packed weights streamed per call, for the
// Qwen2.5-0.5B shapes, M = 1 (decode) and M = 128 (prefill; NBITS_BENCH_M="2,4,8" runs other rows
// instead), 1 and 2 threads,
// next to a STREAM-like read-bandwidth benchmark in the same binary so the
// ratio "GEMV GB/s / read GB/s" comes from one run. Weights rotate over
// several packed copies (>= 320 MB in all) so every call streams from DRAM.
// Kernel sets with an fp16-scale format also run it ("int4_b32h": fp16 scales,
// PackOptions::fp16_scales); "_zp" quants have zero points.
//
//   fp32 vs fp16 scales, decode shapes:
//   build-*/bench/bench_matmul_nbits --benchmark_filter='read_bw/T=1|int8/int4_b32h?/.*M=1/T=1'
//     --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
//     --benchmark_report_aggregates_only=true
//
//   build-*/bench/bench_matmul_nbits --benchmark_filter='read_bw|int4_b32.*M=1/'
//     --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
//     --benchmark_report_aggregates_only=true
//
//   GGUF Q4_K packed with fp32 scales and mins per block (the default here) and with
//   NBITS_SUPER_SCALES=1 (super-block scales, the loaders' choice at 2+ threads):
//   [NBITS_SUPER_SCALES=1] build-*/bench/bench_matmul_nbits
//   --benchmark_filter='read_bw|avx2_int8/q4_k/.*M=1/'
//
//   The kernel the load-time choice runs on Q4_K at the file's size (edit the chosen name in a copy of
//   the choice file to time another candidate):
//   NBITS_BENCH_CHOICE=1 NBITS_SUPER_SCALES=1 [NBITS_KERNEL_CHOICE_FILE=F] build-*/bench/bench_matmul_nbits
//   --benchmark_filter='read_bw|avx2_int8/q4_k/.*M=1/'
//
//   AVX-512 VNNI against AVX2, CompInt8 decode and prefill (both sets are in the
//   table on a VNNI CPU, so one run interleaves them; NBITS_ISA=avx2 drops the first):
//   build-*/bench/bench_matmul_nbits
//     --benchmark_filter='read_bw|x16_(avx512vnni|avx2)_int8/(int4_b32|int4_b32_zp|int8_b32)/(qkv|mlp_up|mlp_down|lm_head)/.*M=(1|128)/'
//     --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
//     --benchmark_report_aggregates_only=true
#include "kernels/matmul_nbits.h"

#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "base/cpu_features.h"
#include "base/thread_pool.h"

namespace nbits::kernels {
namespace {

// Weights touched before one repeats; NBITS_BENCH_HOT=1 keeps one copy (cache-resident: compute roof).
const size_t kRotateBytes = std::getenv("NBITS_BENCH_HOT") != nullptr ? 0 : size_t{320} << 20;
// NBITS_BENCH_CHOICE=1: pack as the loaders do, with the measured kernel choice (kernels/kernel_choice.h:
// the fastest candidate of every set per role, or the one a NBITS_KERNEL_CHOICE_FILE names); the
// label names the kernel that ran.
const bool kChoice = std::getenv("NBITS_BENCH_CHOICE") != nullptr;
constexpr size_t kCacheBudget = size_t{3} << 30;  // packed copies kept between benchmarks

ThreadPool& pool(int threads) {
  static ThreadPool p1(1), p2(2);
  return threads == 1 ? p1 : p2;
}

uint64_t next(uint64_t& s) {
  s ^= s << 13, s ^= s >> 7, s ^= s << 17;
  return s;
}

// A random ONNX-layout weight (codes, scales, optional zero points).
struct Source {
  std::vector<uint8_t> codes;
  std::vector<float> scales;
  QuantizedMatrix w;
  std::vector<uint8_t> zp;
  std::vector<float> mins;
  // span_bits < 8 (int8): codes 112 + [0, 2^span_bits), GGUF Q5_0's (span 5) as nbits holds them.
  // kquant: scales and mins as GGUF's Q4_K / Q5_K hold them (an fp16 D per 256 elements times 0..63,
  // zero points 0), which the sets that read super-block scales pack near the file's size.
  Source(int bits, int block, int64_t K, int64_t N, bool asym, int span_bits, bool kquant = false) {
    w.N = N, w.K = K, w.bits = bits, w.block_size = block;
    codes.resize(static_cast<size_t>(N * w.k_blocks() * w.blob_bytes()));
    scales.resize(static_cast<size_t>(N * w.k_blocks()));
    uint64_t s = 88172645463325252ull;
    for (size_t i = 0; i + 8 <= codes.size(); i += 8) {
      const uint64_t v = next(s);
      std::memcpy(&codes[i], &v, 8);
    }
    if (bits == 8 && span_bits < 8)
      for (auto& c : codes) c = static_cast<uint8_t>(112 + (c & ((1 << span_bits) - 1)));
    for (auto& x : scales) x = 0.001f + static_cast<float>(next(s) % 1000) * 1e-5f;
    w.codes = codes.data(), w.scales = scales.data();
    if (asym) {
      zp.resize(static_cast<size_t>(N * w.zp_row_bytes()));
      for (auto& z : zp) z = static_cast<uint8_t>(next(s));
      w.zero_points = zp.data();
    }
    if (kquant) {
      const int64_t kb = w.k_blocks(), per = 256 / block;
      mins.resize(scales.size());
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = n * kb; i < (n + 1) * kb; i += per) {
          const float d = 1.0f / 4096 + static_cast<float>(next(s) % 64) / 65536, dm = -d / 2;  // fp16-exact
          for (int64_t j = i; j < std::min((n + 1) * kb, i + per); ++j) {
            scales[static_cast<size_t>(j)] = d * static_cast<float>(j == i ? 63 : next(s) % 64);
            mins[static_cast<size_t>(j)] = dm * static_cast<float>(next(s) % 64);
          }
        }
      zp.assign(static_cast<size_t>(N * w.zp_row_bytes()), 0);
      w.zero_points = zp.data(), w.mins = mins.data();
    }
  }
};

struct Packed {
  std::string key;
  std::vector<std::unique_ptr<PackedMatMul>> copies;
  size_t bytes = 0;
};

// What one benchmark packs: quantization, zero points, scale format.
struct Quant {
  const char* name;
  int bits, block;
  bool asym;
  int span_bits = 8;    // int8 codes of a narrower span (GGUF's 5- and 6-bit types)
  bool kquant = false;  // GGUF K-quant scales and mins (Source)
};

// Packed copies of (kernel, quant, fp16 scales, K, N), cached across benchmark runs.
const Packed& packed(const MatMulNBitsKernel& k, const Quant& q, bool fp16, int64_t K, int64_t N) {
  static std::deque<Packed> cache;
  const std::string key =
      std::string(k.name) + "/" + q.name + (fp16 ? "h/" : "/") + std::to_string(K) + "/" + std::to_string(N);
  for (auto& p : cache)
    if (p.key == key) return p;
  Source src(q.bits, q.block, K, N, q.asym, q.span_bits, q.kquant);
  Packed p;
  p.key = key;
  size_t total = 0;
  do {
    PackOptions options;
    options.fp16_scales = fp16;
    options.super_scales = PackOptions::auto_format("NBITS_SUPER_SCALES", false);
    options.int6 = PackOptions::auto_format("NBITS_INT6", false);
    options.kernel_choice = kChoice;
    p.copies.push_back(k.pack_opts(src.w, options));
    total += p.copies.back()->packed_bytes();
  } while (total < kRotateBytes);
  p.bytes = p.copies[0]->packed_bytes();
  size_t held = total;
  for (auto& c : cache) held += c.bytes * c.copies.size();
  while (!cache.empty() && held > kCacheBudget) {
    held -= cache.front().bytes * cache.front().copies.size();
    cache.pop_front();
  }
  cache.push_back(std::move(p));
  return cache.back();
}

void bm_matmul(benchmark::State& st, const MatMulNBitsKernel* k, Quant q, bool fp16, int64_t K, int64_t N,
               int64_t M, int threads) {
  const Packed& p = packed(*k, q, fp16, K, N);
  std::vector<float> A(static_cast<size_t>(M * K)), Y(static_cast<size_t>(M * N));
  uint64_t s = 1;
  for (auto& a : A) a = static_cast<float>(static_cast<int>(next(s) % 2001) - 1000) * 1e-3f;
  size_t i = 0;
  for (auto _ : st) {
    p.copies[i++ % p.copies.size()]->run(A.data(), M, Y.data(), nullptr, pool(threads));
    benchmark::ClobberMemory();
  }
  st.counters["GB/s"] =
      benchmark::Counter(static_cast<double>(p.bytes) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["GMAC/s"] = benchmark::Counter(static_cast<double>(M * N * K) * 1e-9,
                                             benchmark::Counter::kIsIterationInvariantRate);
  st.SetLabel(p.copies[0]->kernel_name(M));
}

// Reads `n` bytes with 256-bit loads and four independent accumulators.
__attribute__((target("avx2"))) uint64_t read_avx2(const uint8_t* p, size_t n) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 128 <= n; i += 128) {
    a0 = _mm256_xor_si256(a0, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i)));
    a1 = _mm256_xor_si256(a1, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
    a2 = _mm256_xor_si256(a2, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 64)));
    a3 = _mm256_xor_si256(a3, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 96)));
  }
  const __m256i x = _mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3));
  return static_cast<uint64_t>(_mm256_extract_epi64(x, 0) ^ _mm256_extract_epi64(x, 3));
}

uint64_t read_plain(const uint8_t* p, size_t n) {
  uint64_t a = 0;
  for (size_t i = 0; i + 8 <= n; i += 8) {
    uint64_t v;
    std::memcpy(&v, p + i, 8);
    a ^= v;
  }
  return a;
}

// STREAM-like read bandwidth over a 1 GiB buffer, split over the pool like the kernels split N.
void bm_read_bw(benchmark::State& st, int threads) {
  constexpr size_t kBytes = size_t{1} << 30;
  static std::unique_ptr<uint8_t, decltype(&std::free)> buf(
      static_cast<uint8_t*>(std::aligned_alloc(64, kBytes)), &std::free);
  static const bool init = [] {
    std::memset(buf.get(), 1, kBytes);
    return true;
  }();
  (void)init;
  const bool avx2 = cpu_features().avx2;
  constexpr int64_t kChunk = 1 << 20;
  std::vector<uint64_t> sink(2);
  for (auto _ : st) {
    pool(threads).parallel_range(kBytes / kChunk, 1, [&](int64_t c0, int64_t c1) {
      const uint8_t* p = buf.get() + c0 * kChunk;
      const size_t n = static_cast<size_t>(c1 - c0) * kChunk;
      sink[c0 == 0 ? 0 : 1] ^= avx2 ? read_avx2(p, n) : read_plain(p, n);
    });
    benchmark::DoNotOptimize(sink.data());
  }
  st.counters["GB/s"] =
      benchmark::Counter(static_cast<double>(kBytes) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

struct Shape {
  const char* name;
  int64_t K, N;
};

// Rows of A: 1 and 128, or the comma-separated list in NBITS_BENCH_M (e.g. "2,4,8,16").
std::vector<int64_t> bench_rows() {
  const char* env = std::getenv("NBITS_BENCH_M");
  if (env == nullptr || *env == '\0') return {1, 128};
  std::vector<int64_t> rows;
  for (const char* p = env;; ++p) {
    char* end = nullptr;
    const long long m = std::strtoll(p, &end, 10);
    if (end == p || m < 1 || (*end != ',' && *end != '\0')) {
      std::fprintf(stderr, "NBITS_BENCH_M: want positive integers separated by commas, got \"%s\"\n", env);
      std::exit(2);
    }
    rows.push_back(m);
    if (*end == '\0') return rows;
    p = end;
  }
}

void register_all() {
  for (int t : {1, 2})
    benchmark::RegisterBenchmark(("read_bw/T=" + std::to_string(t)).c_str(), bm_read_bw, t)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  const Shape shapes[] = {{"mlp_up", 896, 4864},
                          {"qkv", 896, 1152},
                          {"o_proj", 896, 896},
                          {"mlp_down", 4864, 896},
                          {"lm_head", 896, 151936},
                          // OLMoE-1B-7B's (and Qwen2.5-1.5B's hidden 1536 class): a 2048-wide
                          // attention projection and one expert's gate / up and down.
                          {"attn_2k", 2048, 2048},
                          {"expert_up", 2048, 1024},
                          {"expert_down", 1024, 2048}};
  const Quant quants[] = {{"int4_b32", 4, 32, false},     {"int4_b32_zp", 4, 32, true},
                          {"int4_b128", 4, 128, false},   {"int8_b32", 8, 32, false},
                          {"q5_0", 8, 32, false, 5},         // GGUF Q5_0 as 8-bit codes 112..143
                          {"q6_k", 8, 16, false, 6},         // a 6-bit span in blocks of 16, as GGUF Q6_K
                          {"q4_k", 4, 32, false, 8, true}};  // GGUF Q4_K (super-block scales, mins)
  for (const auto& k : matmul_nbits_kernels()) {
    for (const Quant& q : quants)
      for (bool fp16 : {false, true})
        for (const Shape& s : shapes)
          for (int64_t M : bench_rows())
            for (int t : {1, 2}) {
              QuantizedMatrix probe;
              probe.N = s.N, probe.K = s.K, probe.bits = q.bits, probe.block_size = q.block;
              if (!k.supports(probe, cpu_features()) || (fp16 && k.pack_with == nullptr)) continue;
              const bool ref = std::string(k.name).rfind("ref", 0) == 0;
              if (ref && (M > 1 || q.bits != 4 || q.block != 32 || q.asym))
                continue;  // the reference: scale only
              const std::string name = std::string(k.name) + "/" + q.name + (fp16 ? "h/" : "/") + s.name +
                                       "/K=" + std::to_string(s.K) + "/N=" + std::to_string(s.N) +
                                       "/M=" + std::to_string(M) + "/T=" + std::to_string(t);
              benchmark::RegisterBenchmark(name.c_str(), bm_matmul, &k, q, fp16, s.K, s.N, M, t)
                  ->UseRealTime()
                  ->Unit(benchmark::kMicrosecond);
            }
  }
}

}  // namespace
}  // namespace nbits::kernels

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  nbits::kernels::register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
