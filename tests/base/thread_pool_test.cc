#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace nbits {

TEST(ThreadPool, RunsEveryTaskOnce) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (int rep = 0; rep < 50; ++rep) {
      std::vector<std::atomic<int>> hits(97);
      pool.parallel_for(97, [&](int64_t i) { hits[static_cast<size_t>(i)]++; });
      for (auto& h : hits) ASSERT_EQ(h.load(), 1);
    }
  }
}

TEST(ThreadPool, RangeIsAlignedAndCovers) {
  ThreadPool pool(2);
  std::vector<int> seen(1000, 0);
  pool.parallel_range(1000, 16, [&](int64_t b, int64_t e) {
    EXPECT_EQ(b % 16, 0);
    for (int64_t i = b; i < e; ++i) seen[static_cast<size_t>(i)]++;
  });
  for (int v : seen) ASSERT_EQ(v, 1);
}

}  // namespace nbits
