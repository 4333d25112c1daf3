// ThreadPool under the decode pattern: many short calls back to back (spinning
// workers), calls spaced past the spin window (sleeping workers, futex wake-up),
// and nested calls (run inline).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "base/thread_pool.h"

namespace nbits {
namespace {

TEST(ThreadPoolStress, ManyShortCallsRunEveryTaskOnce) {
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    std::vector<int> hits(7);
    for (int rep = 0; rep < 500; ++rep) {
      pool.parallel_for(7, [&](int64_t i) { hits[static_cast<size_t>(i)]++; });
    }
    for (int h : hits) EXPECT_EQ(h, 500);
  }
}

TEST(ThreadPoolStress, WakesSleepingWorkers) {
  ThreadPool pool(2);
  std::atomic<int> on_worker{0};
  const auto caller = std::this_thread::get_id();
  for (int rep = 0; rep < 5; ++rep) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // past the spin window: workers sleep
    std::atomic<int> sum{0};
    pool.parallel_for(64, [&](int64_t i) {
      sum += static_cast<int>(i);
      if (std::this_thread::get_id() != caller) on_worker++;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    });
    EXPECT_EQ(sum.load(), 64 * 63 / 2);
  }
  EXPECT_GT(on_worker.load(), 0);  // the worker did take tasks
}

TEST(ThreadPoolStress, NestedCallsRunInline) {
  ThreadPool pool(2);
  std::atomic<int> total{0};
  pool.parallel_for(4, [&](int64_t) { pool.parallel_for(3, [&](int64_t) { total++; }); });
  EXPECT_EQ(total.load(), 12);
}

}  // namespace
}  // namespace nbits
