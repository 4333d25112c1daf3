#include "modelgen/bandwidth.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "base/error.h"
#include "base/huge_pages.h"
#include "base/thread_pool.h"
#include "base/timer.h"

namespace nbits::modelgen {
namespace {

volatile uint64_t g_sink = 0;

// The array lives in the memory packed weights live in (2 MiB pages where the OS gives them:
// base/huge_pages.h), so the floor is measured on the pages decode reads.
struct FreeDeleter {
  size_t bytes = 0;
  void operator()(void* p) const { huge_page_free(p, bytes); }
};

// Sum with eight independent lanes so the compiler vectorizes the loads.
uint64_t sum_range(const uint64_t* p, int64_t n) {
  uint64_t a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) a[j] += p[i + j];
  for (; i < n; ++i) a[0] += p[i];
  uint64_t s = 0;
  for (uint64_t v : a) s += v;
  return s;
}

}  // namespace

BandwidthResult measure_read_bandwidth(int threads, size_t bytes, int reps) {
  NBITS_CHECK(threads >= 1, "bandwidth: threads must be >= 1 (got ", threads, ")");
  NBITS_CHECK(reps >= 1, "bandwidth: reps must be >= 1 (got ", reps, ")");
  constexpr size_t kChunk = 64 * 1024;
  bytes = bytes / kChunk * kChunk;
  NBITS_CHECK(bytes >= kChunk, "bandwidth: array size must be at least 64 KiB");
  std::unique_ptr<uint64_t, FreeDeleter> buf(static_cast<uint64_t*>(huge_page_alloc(bytes)),
                                             FreeDeleter{bytes});
  NBITS_CHECK(buf != nullptr, "bandwidth: cannot allocate ", bytes, " bytes");
  uint64_t* data = buf.get();
  const int64_t n = static_cast<int64_t>(bytes / 8);
  const int64_t align = kChunk / 8;
  ThreadPool pool(threads);
  // First touch from the threads that will read (NUMA placement), non-zero data.
  pool.parallel_range(n, align, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) data[i] = static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull;
  });
  std::vector<uint64_t> sink(static_cast<size_t>(threads) * 8, 0);
  BandwidthResult r;
  r.threads = threads;
  r.bytes = bytes;
  r.reps = reps;
  for (int rep = 0; rep < reps; ++rep) {
    Stopwatch sw;
    // One contiguous range per thread, each written to its own cache line.
    pool.parallel_for(threads, [&](int64_t t) {
      const int64_t chunks = n / align;
      const int64_t c0 = chunks * t / threads, c1 = chunks * (t + 1) / threads;
      sink[static_cast<size_t>(t) * 8] += sum_range(data + c0 * align, (c1 - c0) * align);
    });
    const double s = sw.elapsed_s();
    r.gbs.push_back(static_cast<double>(bytes) / s * 1e-9);
  }
  uint64_t total = 0;
  for (uint64_t v : sink) total += v;
  g_sink = total;  // keeps the sums alive
  std::vector<double> sorted = r.gbs;
  std::sort(sorted.begin(), sorted.end());
  r.median_gbs = sorted[sorted.size() / 2];
  if (sorted.size() % 2 == 0)
    r.median_gbs = 0.5 * (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]);
  r.best_gbs = sorted.back();
  r.worst_gbs = sorted.front();
  return r;
}

}  // namespace nbits::modelgen
