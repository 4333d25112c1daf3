// The error of an fp16 KV cache (--kv-cache f16) against the fp32 cache at long context, on any
// model folder: the same prompt of P random ids (fixed seed) prefilled into both, then N decode
// steps teacher-forced with the fp32 cache's greedy tokens. Prints max|d| / max|logit| (and max|d|)
// of the prompt's last row and of the decode steps, and how often the argmax differs.
//
//   build-*/bench/bench_kv_cache_error MODEL_DIR [P=4096] [N=16] [threads=1]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "llm/generator.h"

namespace {

struct Diff {
  double abs = 0, rel = 0;
};

Diff diff(std::span<const float> a, std::span<const float> ref) {
  double d = 0, mx = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    d = std::max(d, std::fabs(static_cast<double>(a[i]) - ref[i]));
    mx = std::max(mx, std::fabs(static_cast<double>(ref[i])));
  }
  return {d, d / mx};
}

}  // namespace

int main(int argc, char** argv) {
  using nbits::graph::SessionOptions;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL_DIR [prompt tokens=4096] [decode steps=16] [threads=1]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const int64_t P = argc > 2 ? std::atoll(argv[2]) : 4096, N = argc > 3 ? std::atoll(argv[3]) : 16;
  SessionOptions o32, o16;
  o32.threads = o16.threads = argc > 4 ? std::atoi(argv[4]) : 1;
  o32.kv_cache = SessionOptions::KvCache::kF32;
  o16.kv_cache = SessionOptions::KvCache::kF16;
  auto g32 = nbits::llm::Generator::load(dir, o32, P + N + 1);
  auto g16 = nbits::llm::Generator::load(dir, o16, P + N + 1);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> tok(3, static_cast<int32_t>(g32->vocab_size()) - 1);
  std::vector<int32_t> prompt(static_cast<size_t>(P));
  for (auto& t : prompt) t = tok(rng);
  const std::span<const float> p32 = g32->append(prompt);
  const std::vector<float> l32(p32.begin(), p32.end());
  const Diff first = diff(g16->append(prompt), l32);
  int32_t id = static_cast<int32_t>(std::max_element(l32.begin(), l32.end()) - l32.begin());
  Diff worst;
  int argmax_diff = 0;
  for (int64_t step = 0; step < N; ++step) {
    const std::span<const float> a = g32->append(std::span<const int32_t>(&id, 1));
    const std::vector<float> d32(a.begin(), a.end());
    const std::span<const float> d16 = g16->append(std::span<const int32_t>(&id, 1));
    const Diff d = diff(d16, d32);
    worst.abs = std::max(worst.abs, d.abs);
    worst.rel = std::max(worst.rel, d.rel);
    const auto top32 = std::max_element(d32.begin(), d32.end()) - d32.begin();
    argmax_diff += top32 != std::max_element(d16.begin(), d16.end()) - d16.begin();
    id = static_cast<int32_t>(top32);
  }
  std::printf(
      "%s: fp16 vs fp32 KV cache after a %lld-token random prompt: prompt's last row max|d| %.3g "
      "(%.2e of max|logit|); %lld teacher-forced decode steps: max|d| %.3g (%.2e of max|logit|), "
      "argmax differs at %d\n",
      dir.c_str(), static_cast<long long>(P), first.abs, first.rel, static_cast<long long>(N), worst.abs,
      worst.rel, argmax_diff);
  return 0;
}
