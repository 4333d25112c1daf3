// huge_page_alloc: alignment, contents, chunk carving, own mappings, giving memory back, the
// MADV_HUGEPAGE advice reaching the kernel, and concurrent use.
#include "base/huge_pages.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace nbits {
namespace {

void fill(uint8_t* p, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(seed + i * 131);
}

bool holds(const uint8_t* p, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != static_cast<uint8_t>(seed + i * 131)) return false;
  return true;
}

// The VmFlags line of the /proc/self/smaps mapping that holds address a ("" if none).
std::string vm_flags_at(const void* a) {
  std::ifstream f("/proc/self/smaps");
  const uintptr_t v = reinterpret_cast<uintptr_t>(a);
  std::string line;
  bool inside = false;
  while (std::getline(f, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-' && line.find(':') > line.find(' ')) {
      inside = v >= lo && v < hi;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

TEST(HugePages, BuffersAreAlignedAndKeepTheirContents) {
  const HugePageStats before = huge_page_stats();
  const std::vector<size_t> sizes = {0, 1, 63, 64, 65, 4095, 100000, size_t{3} << 20, (size_t{17} << 20) + 5};
  std::vector<uint8_t*> ptrs;
  for (size_t i = 0; i < sizes.size(); ++i) {
    auto* p = static_cast<uint8_t*>(huge_page_alloc(sizes[i]));
    ASSERT_NE(p, nullptr) << sizes[i];
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << sizes[i];
    fill(p, sizes[i], static_cast<uint8_t>(i));
    ptrs.push_back(p);
  }
  for (size_t i = 0; i < sizes.size(); ++i)
    EXPECT_TRUE(holds(ptrs[i], sizes[i], static_cast<uint8_t>(i))) << sizes[i];
  if (huge_pages_enabled()) {
    EXPECT_EQ(huge_page_stats().live_buffers, before.live_buffers + sizes.size());
  }
  for (size_t i = 0; i < sizes.size(); ++i) huge_page_free(ptrs[i], sizes[i]);
  huge_page_free(nullptr, 10);  // ignored
  const HugePageStats after = huge_page_stats();
  EXPECT_EQ(after.live_buffers, before.live_buffers);
  // The own mapping of the 17 MiB buffer is gone; at most the chunk being carved remains.
  EXPECT_LE(after.regions, before.regions + 1);
}

TEST(HugePages, SmallBuffersShareAChunkAndLargeOnesGetTheirOwnAdvisedMapping) {
  if (!huge_pages_enabled()) GTEST_SKIP() << "plain heap here (NBITS_HUGE_PAGES=off, ASan or no madvise)";
  const HugePageStats before = huge_page_stats();
  auto* a = static_cast<uint8_t*>(huge_page_alloc(1000));
  auto* b = static_cast<uint8_t*>(huge_page_alloc(5000));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  // Carved in order, 64-byte granules: b follows a, unless a ended a chunk and b began another.
  const HugePageStats mid = huge_page_stats();
  const bool same_chunk = b > a && b - a < (std::ptrdiff_t{64} << 20);
  if (same_chunk) {
    EXPECT_EQ(b - a, 1024);
  }
  EXPECT_NE(vm_flags_at(a).find(" hg"), std::string::npos) << vm_flags_at(a);

  const size_t big = (size_t{20} << 20) + 12345;
  auto* c = static_cast<uint8_t*>(huge_page_alloc(big));
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c) % (size_t{2} << 20), 0u);
  EXPECT_EQ(huge_page_stats().regions, mid.regions + 1);
  EXPECT_NE(vm_flags_at(c).find(" hg"), std::string::npos) << vm_flags_at(c);
  // Its tail past the last whole 2 MiB page is not advised (no memory spent on rounding up).
  EXPECT_EQ(vm_flags_at(c + big - 1).find(" hg"), std::string::npos) << vm_flags_at(c + big - 1);
  fill(c, big, 7);
  EXPECT_TRUE(holds(c, big, 7));
  huge_page_free(c, big);
  EXPECT_EQ(huge_page_stats().regions, mid.regions);
  EXPECT_EQ(vm_flags_at(c), "");  // unmapped

  huge_page_free(a, 1000);
  huge_page_free(b, 5000);
  EXPECT_EQ(huge_page_stats().live_buffers, before.live_buffers);
}

TEST(HugePages, FreedBuffersAreNotHandedOutTwice) {
  // Many buffers alive at once (more than one chunk's worth), freed in a shuffled order
  // while others are made: every live buffer keeps its contents.
  std::mt19937 rng(5);
  struct Buf {
    uint8_t* p;
    size_t n;
    uint8_t seed;
  };
  std::vector<Buf> live;
  const HugePageStats before = huge_page_stats();
  for (int i = 0; i < 400; ++i) {
    const size_t n = 1 + rng() % (size_t{1} << 20);
    auto* p = static_cast<uint8_t*>(huge_page_alloc(n));
    ASSERT_NE(p, nullptr);
    const auto seed = static_cast<uint8_t>(i);
    fill(p, n, seed);
    live.push_back({p, n, seed});
    if (rng() % 3 == 0) {
      const size_t k = rng() % live.size();
      ASSERT_TRUE(holds(live[k].p, live[k].n, live[k].seed)) << i;
      huge_page_free(live[k].p, live[k].n);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
    }
  }
  for (const Buf& b : live) {
    EXPECT_TRUE(holds(b.p, b.n, b.seed));
    huge_page_free(b.p, b.n);
  }
  EXPECT_EQ(huge_page_stats().live_buffers, before.live_buffers);
  EXPECT_LE(huge_page_stats().regions, before.regions + 1);
}

TEST(HugePages, ThreadsAllocateAndFreeConcurrently) {
  const HugePageStats before = huge_page_stats();
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t, &bad] {
      std::mt19937 rng(static_cast<unsigned>(t));
      for (int i = 0; i < 200; ++i) {
        const size_t n = 1 + rng() % 200000;
        auto* p = static_cast<uint8_t*>(huge_page_alloc(n));
        if (p == nullptr) {
          ++bad[static_cast<size_t>(t)];
          continue;
        }
        fill(p, n, static_cast<uint8_t>(t * 50 + i));
        if (!holds(p, n, static_cast<uint8_t>(t * 50 + i))) ++bad[static_cast<size_t>(t)];
        huge_page_free(p, n);
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(bad[static_cast<size_t>(t)], 0) << t;
  EXPECT_EQ(huge_page_stats().live_buffers, before.live_buffers);
}

}  // namespace
}  // namespace nbits
