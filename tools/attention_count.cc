// Counts the guest instructions of one Qwen2.5-0.5B decoder layer's attention under QEMU (14 query
// heads on 2 kv heads, head 64), between the insncount plugins' region markers (riscv64:
// ../shared/tools/riscv/insncount.c, aarch64: tools/arm64/insncount_a64.c), for the kernels of one
// ISA (kernels::attention_select_isa). Built and run by tools/attention_count.sh.
//   usage: attention_count ISA CACHE MODE N
//   ISA scalar|rvv|neon; CACHE f32|f16|q8; MODE decode (one position after N cached keys) or
//   prefill (N positions attending causally to themselves, the tile kernel).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/fp16.h"
#include "kernels/attention.h"

using namespace nbits;
using namespace nbits::kernels;

#if defined(__aarch64__)
#define REGION_BEGIN() asm volatile("hint #122")
#define REGION_END() asm volatile("hint #123")
#else
#define REGION_BEGIN() asm volatile("slti x0, x0, 0x7a1")
#define REGION_END() asm volatile("slti x0, x0, 0x7a2")
#endif

namespace {

constexpr int64_t kKvHeads = 2, kGroup = 7, kHead = 64;

template <typename T>
struct Cache {
  std::vector<T> K, V;
};

// n rows of kHead values per kv head, in the cache's element type.
template <typename T>
Cache<T> make_cache(int64_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> k(static_cast<size_t>(n * kHead)), v(k.size());
  for (auto& x : k) x = u(rng);
  for (auto& x : v) x = u(rng);
  Cache<T> c;
  if constexpr (std::is_same_v<T, float>) {
    c.K = k;
    c.V = v;
  } else if constexpr (std::is_same_v<T, uint16_t>) {
    for (float x : k) c.K.push_back(float_to_fp16(x));
    for (float x : v) c.V.push_back(float_to_fp16(x));
  } else {
    const int64_t rb = kv_q8_row_bytes(kHead);
    c.K.resize(static_cast<size_t>(n * rb));
    c.V.resize(c.K.size());
    for (int64_t j = 0; j < n; ++j) {
      quantize_kv_q8_row(k.data() + j * kHead, kHead, c.K.data() + j * rb);
      quantize_kv_q8_row(v.data() + j * kHead, kHead, c.V.data() + j * rb);
    }
  }
  return c;
}

template <typename T>
double run(const std::string& mode, int64_t n) {
  std::mt19937 rng(1);
  std::vector<Cache<T>> caches;
  for (int64_t h = 0; h < kKvHeads; ++h) caches.push_back(make_cache<T>(n, rng));
  AttentionParams p;
  p.head_size = kHead;
  p.scale = 0.125f;
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  double check = 0.0;
  if (mode == "decode") {
    std::vector<float> q(static_cast<size_t>(kGroup * kHead)), out(q.size());
    for (auto& x : q) x = u(rng);
    for (int64_t h = 0; h < kKvHeads; ++h) {
      REGION_BEGIN();
      attend_decode(q.data(), kHead, kGroup, caches[h].K.data(), caches[h].V.data(), n, p, out.data(), kHead);
      REGION_END();
      for (float x : out) check += x;
    }
    return check;
  }
  // Prefill: the kGroup heads at every position r see keys [0, r]; one attend_rows call per kv head.
  const int64_t rows = n * kGroup;
  std::vector<float> q(static_cast<size_t>(rows * kHead)), out(q.size());
  for (auto& x : q) x = u(rng);
  std::vector<const float*> qp(static_cast<size_t>(rows));
  std::vector<float*> op(static_cast<size_t>(rows));
  std::vector<int64_t> lo(static_cast<size_t>(rows), 0), hi(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    qp[r] = q.data() + r * kHead;
    op[r] = out.data() + r * kHead;
    hi[r] = r / kGroup + 1;
  }
  const AttentionRows ar{qp.data(), op.data(), lo.data(), hi.data(), rows};
  for (int64_t h = 0; h < kKvHeads; ++h) {
    REGION_BEGIN();
    attend_rows(ar, caches[h].K.data(), caches[h].V.data(), p);
    REGION_END();
    for (float x : out) check += x;
  }
  return check;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: attention_count scalar|rvv|neon f32|f16|q8 decode|prefill N\n");
    return 2;
  }
  const std::string isa = argv[1], cache = argv[2], mode = argv[3];
  const int64_t n = std::atoll(argv[4]);
  if (!attention_select_isa(isa.c_str())) {
    std::fprintf(stderr, "attention kernels %s not available here\n", isa.c_str());
    return 1;
  }
  if ((mode != "decode" && mode != "prefill") || n < 1) {
    std::fprintf(stderr, "MODE must be decode or prefill and N >= 1\n");
    return 2;
  }
  double check = 0.0;
  if (cache == "f32")
    check = run<float>(mode, n);
  else if (cache == "f16")
    check = run<uint16_t>(mode, n);
  else if (cache == "q8")
    check = run<int8_t>(mode, n);
  else {
    std::fprintf(stderr, "CACHE must be f32, f16 or q8\n");
    return 2;
  }
  std::printf("isa %s cache %s %s n=%lld check %.6g\n", attention_isa(), cache.c_str(), mode.c_str(),
              static_cast<long long>(n), check);
  return 0;
}
