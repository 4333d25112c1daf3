// The adaptive draft length: long drafts while they are accepted, none when they are not (or
// when a verify step costs too much), back on when a cheap drafter's guesses match again.
#include "speculative/draft_length.h"

#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"

namespace nbits::speculative {
namespace {

TEST(DraftLength, ExpectedTokensIsTheGeometricSum) {
  EXPECT_DOUBLE_EQ(DraftLength::expected_tokens(0.5, 0), 1.0);
  EXPECT_DOUBLE_EQ(DraftLength::expected_tokens(0.5, 1), 1.5);
  EXPECT_NEAR(DraftLength::expected_tokens(0.5, 3), 1.875, 1e-12);
  EXPECT_NEAR(DraftLength::expected_tokens(0.9, 4), 1 + 0.9 + 0.81 + 0.729 + 0.6561, 1e-12);
}

TEST(DraftLength, AcceptedDraftsGrowCheapStepsAndRejectedOnesSwitchItOff) {
  DraftLength d(8);
  EXPECT_GT(d.next(), 0);  // the prior tries drafts
  // Every draft accepted, a verify step of k drafts costing 10 + k ms against 10 for a plain one.
  for (int i = 0; i < 40; ++i) {
    const int64_t k = d.next();
    d.record_step(k, k, 10.0 + static_cast<double>(k));
  }
  EXPECT_EQ(d.next(), 8);
  EXPECT_GT(d.acceptance(), 0.9);
  // Now none accepted: speculation turns itself off.
  for (int i = 0; i < 40 && d.next() > 0; ++i)
    d.record_step(d.next(), 0, 10.0 + static_cast<double>(d.next()));
  EXPECT_EQ(d.next(), 0);
  // Plain steps measured, and a cheap drafter's guesses start matching: back on.
  for (int i = 0; i < 40; ++i) {
    d.record_step(0, 0, 10.0);
    d.record_acceptance(1, 1);
  }
  EXPECT_GT(d.next(), 0);
}

TEST(DraftLength, AnExpensiveVerifyStepKeepsDraftsShort) {
  DraftLength cheap(8), dear(8);
  for (int i = 0; i < 60; ++i) {
    for (DraftLength* d : {&cheap, &dear}) {
      const int64_t k = d->next();
      // 3 of 4 drafted tokens accepted on average: accept a prefix of 3/4 of the drafts.
      const int64_t acc = (k * 3) / 4;
      const double per_row = d == &cheap ? 0.05 : 0.8;  // of a plain step, per drafted token
      d->record_step(k, acc, 10.0 * (1.0 + per_row * static_cast<double>(k)));
    }
  }
  EXPECT_LT(dear.next(), cheap.next());
}

// Step times that grow faster than the drafted tokens (a second row tile from 6 rows on): the
// length whose measured time pays best is kept, not the longest a straight line would favour.
TEST(DraftLength, MeasuredLengthsArePricedAsMeasured) {
  // The 1.5B with a 0.5B draft on AMD Zen4, 1 thread (ms): plain, 1, 5 and 8 drafted tokens.
  const auto cost = [](int64_t k) { return k == 0 ? 35.0 : k <= 5 ? 35.0 + 26.6 * k : 35.0 + 34.3 * k; };
  DraftLength d(8);
  for (int64_t k : {0, 0, 0, 1, 1, 5, 5, 8, 8}) d.record_step(k, k, cost(k));
  EXPECT_DOUBLE_EQ(d.measured_ms(8), cost(8));
  EXPECT_EQ(d.next(), 5);
  for (int i = 0; i < 20; ++i) {
    const int64_t k = d.next();
    d.record_step(k, k, cost(k));
  }
  EXPECT_EQ(d.next(), 5);
}

TEST(DraftLength, BadArgumentsAreRefused) {
  EXPECT_THROW(DraftLength(-1), Error);
  EXPECT_THROW(DraftLength(65), Error);
  DraftLength d(4);
  EXPECT_THROW(d.record_step(5, 0, 1.0), Error);
  EXPECT_THROW(d.record_step(2, 3, 1.0), Error);
  DraftLength off(0);
  EXPECT_EQ(off.next(), 0);
  EXPECT_THROW(DraftLength(4, 5), Error);
  EXPECT_THROW(DraftLength(4, -1), Error);
}

TEST(DraftLength, AFloorHoldsWhateverTheAcceptance) {
  DraftLength fixed(6, 6), floor(8, 2);
  for (int i = 0; i < 50; ++i) {
    fixed.record_step(fixed.next(), 0, 10.0 + 5.0 * static_cast<double>(fixed.next()));
    floor.record_step(floor.next(), 0, 10.0 + 5.0 * static_cast<double>(floor.next()));
    EXPECT_EQ(fixed.next(), 6);
    EXPECT_GE(floor.next(), 2);
  }
  EXPECT_EQ(floor.next(), 2);
}

}  // namespace
}  // namespace nbits::speculative
