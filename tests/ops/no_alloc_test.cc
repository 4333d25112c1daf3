// After warm-up, a decode step allocates nothing: tests/support/alloc_counter.cc
// replaces global operator new in this test binary and counts calls.
#include <gtest/gtest.h>

#include "greedy_driver.h"
#include "support/alloc_counter.h"
#include "support/shared_data.h"

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
  const int64_t before = allocation_count();
  for (int i = 0; i < 20; ++i) {
    seq.push_back(GreedyDriver::argmax(lg, d.vocab()));
    lg = d.step(&seq.back(), 1);
  }
  EXPECT_EQ(allocation_count() - before, 0) << variant << ": allocations during 20 decode steps";
  EXPECT_GT(d.session->arena_bytes(), 0u);
}

TEST(NoAlloc, CounterSeesAllocations) {
  const int64_t before = allocation_count();
  auto* p = new std::vector<int>(100);
  // Keep both allocations observable: without this the optimizer may elide the buffer's.
  asm volatile("" : : "r"(p->data()) : "memory");
  const int64_t after = allocation_count();
  delete p;
  EXPECT_EQ(after - before, 2);
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
