// After warm-up, a decode step allocates nothing: global operator new is
// replaced in this test binary and counts calls while armed.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "greedy_driver.h"
#include "support/shared_data.h"

namespace {
std::atomic<bool> g_armed{false};
std::atomic<int64_t> g_news{0};

void* counted_alloc(std::size_t n, std::size_t align) {
  if (g_armed.load(std::memory_order_relaxed)) g_news.fetch_add(1, std::memory_order_relaxed);
  if (n == 0) n = 1;
  void* p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align)
                                              : std::malloc(n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(std::size_t n) { return counted_alloc(n, 0); }
void* operator new[](std::size_t n) { return counted_alloc(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) {
  return counted_alloc(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return counted_alloc(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace nbits::testing {
namespace {

void expect_no_alloc_decode(const std::string& variant, int threads, bool last_only) {
  const std::string dir = shared_path("models/stories260K/onnx_" + variant);
  NBITS_REQUIRE_SHARED(dir + "/model.onnx");
  graph::SessionOptions opt;
  opt.threads = threads;
  opt.profile = true;
  GreedyDriver d(dir, opt);
  if (last_only) d.session->set_last_position_only("logits", true);
  std::vector<int64_t> seq = {1, 403, 407, 261, 378};
  seq.reserve(64);
  const float* lg = d.step(seq.data(), static_cast<int64_t>(seq.size()));
  seq.push_back(GreedyDriver::argmax(lg, d.vocab()));
  lg = d.step(&seq.back(), 1);  // warm-up decode step
  g_news = 0;
  g_armed = true;
  for (int i = 0; i < 20; ++i) {
    seq.push_back(GreedyDriver::argmax(lg, d.vocab()));
    lg = d.step(&seq.back(), 1);
  }
  g_armed = false;
  EXPECT_EQ(g_news.load(), 0) << variant << ": allocations during 20 decode steps";
  EXPECT_GT(d.session->arena_bytes(), 0u);
}

TEST(NoAlloc, CounterSeesAllocations) {
  g_news = 0;
  g_armed = true;
  auto* p = new std::vector<int>(100);
  g_armed = false;
  delete p;
  EXPECT_EQ(g_news.load(), 2);
}

TEST(NoAlloc, DecodeStepsFp32) { expect_no_alloc_decode("fp32", 1, false); }
TEST(NoAlloc, DecodeStepsInt4Threads) { expect_no_alloc_decode("int4", 2, true); }
TEST(NoAlloc, DecodeStepsInt8LastOnly) { expect_no_alloc_decode("int8", 1, true); }

TEST(LastPositionOnly, PrefillLogitsEqualFullRun) {
  const std::string dir = shared_path("models/stories260K/onnx_int4");
  NBITS_REQUIRE_SHARED(dir + "/model.onnx");
  GreedyDriver full(dir), last(dir);
  last.session->set_last_position_only("logits", true);
  const std::vector<int64_t> prompt = {1, 403, 407, 261, 378};
  const float* a = full.step(prompt.data(), 5);
  const float* b = last.step(prompt.data(), 5);
  EXPECT_EQ(full.session->output("logits").shape, (graph::Shape{1, 5, 512}));
  EXPECT_EQ(last.session->output("logits").shape, (graph::Shape{1, 1, 512}));
  for (int i = 0; i < full.vocab(); ++i) ASSERT_EQ(a[i], b[i]) << i;
}

TEST(Profile, CountsCallsAndNamesKernels) {
  const std::string dir = shared_path("models/stories260K/onnx_int4");
  NBITS_REQUIRE_SHARED(dir + "/model.onnx");
  graph::SessionOptions opt;
  opt.profile = true;
  GreedyDriver d(dir, opt);
  const int64_t one = 1;
  d.step(&one, 1);
  d.step(&one, 1);
  bool saw_nbits = false;
  for (const auto& e : d.session->profile()) {
    EXPECT_EQ(e.calls, 2) << e.name;
    if (e.op_type == "MatMulNBits") {
      saw_nbits = true;
      EXPECT_FALSE(e.kernel.empty()) << e.name;
    }
  }
  EXPECT_TRUE(saw_nbits);
  EXPECT_EQ(d.session->matmul_nbits_info().size(), 5u * 5 + 1);  // 5 layers x 5 projections + lm_head
  EXPECT_GT(d.session->weight_bytes(), 0u);
  d.session->reset_profile();
  for (const auto& e : d.session->profile()) EXPECT_EQ(e.calls, 0);
}

}  // namespace
}  // namespace nbits::testing
