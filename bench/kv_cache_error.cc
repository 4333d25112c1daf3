// The error of an fp16 and an int8 KV cache (--kv-cache f16, q8) against the fp32 cache at long
// context, on any model folder: the same prompt of P random ids (fixed seed) prefilled into each,
// then N decode steps teacher-forced with the fp32 cache's greedy tokens. Prints, per dtype,
// max|d| / max|logit| (and max|d|) of the prompt's last row and of the decode steps, and how often
// the argmax differs.
//
//   build-*/bench/bench_kv_cache_error MODEL_DIR [P=4096] [N=16] [threads=1]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <span>
#include <string>
#include <utility>
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
  const int threads = argc > 4 ? std::atoi(argv[4]) : 1;
  auto load = [&](SessionOptions::KvCache kv) {
    SessionOptions o;
    o.threads = threads;
    o.kv_cache = kv;
    return nbits::llm::Generator::load(dir, o, P + N + 1);
  };
  auto g32 = load(SessionOptions::KvCache::kF32);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> tok(3, static_cast<int32_t>(g32->vocab_size()) - 1);
  std::vector<int32_t> prompt(static_cast<size_t>(P));
  for (auto& t : prompt) t = tok(rng);
  // The fp32 cache's prompt row and teacher-forced decode rows, kept to compare each dtype with.
  const std::span<const float> p32 = g32->append(prompt);
  const std::vector<float> l32(p32.begin(), p32.end());
  std::vector<int32_t> ids;
  std::vector<std::vector<float>> d32;
  int32_t id = static_cast<int32_t>(std::max_element(l32.begin(), l32.end()) - l32.begin());
  for (int64_t step = 0; step < N; ++step) {
    ids.push_back(id);
    const std::span<const float> a = g32->append(std::span<const int32_t>(&id, 1));
    d32.emplace_back(a.begin(), a.end());
    id = static_cast<int32_t>(std::max_element(a.begin(), a.end()) - a.begin());
  }
  g32.reset();
  const std::pair<SessionOptions::KvCache, const char*> kinds[] = {
      {SessionOptions::KvCache::kF16, "fp16"}, {SessionOptions::KvCache::kQ8, "int8 (q8)"}};
  for (const auto& [kv, label] : kinds) {
    auto g = load(kv);
    const Diff first = diff(g->append(prompt), l32);
    Diff worst;
    int argmax_diff = 0;
    for (int64_t step = 0; step < N; ++step) {
      const std::span<const float> dl =
          g->append(std::span<const int32_t>(&ids[static_cast<size_t>(step)], 1));
      const std::vector<float>& ref = d32[static_cast<size_t>(step)];
      const Diff d = diff(dl, ref);
      worst.abs = std::max(worst.abs, d.abs);
      worst.rel = std::max(worst.rel, d.rel);
      argmax_diff += std::max_element(ref.begin(), ref.end()) - ref.begin() !=
                     std::max_element(dl.begin(), dl.end()) - dl.begin();
    }
    std::printf(
        "%s: %s vs fp32 KV cache after a %lld-token random prompt: prompt's last row max|d| %.3g "
        "(%.2e of max|logit|); %lld teacher-forced decode steps: max|d| %.3g (%.2e of max|logit|), "
        "argmax differs at %d; KV cache %.1f MiB\n",
        dir.c_str(), label, static_cast<long long>(P), first.abs, first.rel, static_cast<long long>(N),
        worst.abs, worst.rel, argmax_diff, static_cast<double>(g->kv_cache_bytes()) / (1024.0 * 1024.0));
  }
  return 0;
}
