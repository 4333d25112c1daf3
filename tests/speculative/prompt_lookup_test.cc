// Prompt lookup proposals: the continuation of the latest earlier occurrence of the longest
// suffix n-gram (max_ngram down to min_ngram), bounded by max_tokens and by the sequence.
#include "speculative/prompt_lookup.h"

#include <gtest/gtest.h>

#include <vector>

#include "base/error.h"

namespace nbits::speculative {
namespace {

std::vector<int32_t> propose(PromptLookup& p, const std::vector<int32_t>& ctx, int64_t max_tokens) {
  std::vector<int32_t> out = {99, 99};  // cleared by propose
  p.propose(ctx, max_tokens, out);
  return out;
}

TEST(PromptLookup, ProposesWhatFollowedTheLatestEarlierOccurrence) {
  PromptLookup p(2, 4);
  // "5 6" occurs at 0 (followed by 7 8) and at 4 (followed by 9 10): the latest wins.
  const std::vector<int32_t> ctx = {5, 6, 7, 8, 5, 6, 9, 10, 11, 5, 6};
  EXPECT_EQ(propose(p, ctx, 3), (std::vector<int32_t>{9, 10, 11}));
  EXPECT_EQ(propose(p, ctx, 1), (std::vector<int32_t>{9}));
  // Bounded by the end of the sequence: the continuation runs into the suffix itself.
  EXPECT_EQ(propose(p, ctx, 10), (std::vector<int32_t>{9, 10, 11, 5, 6}));
}

TEST(PromptLookup, TheLongestMatchingSuffixWins) {
  PromptLookup p(1, 3);
  // Suffix "1 2 3" occurs at 0 (followed by 40); "2 3" alone also at 5 (followed by 50), later.
  const std::vector<int32_t> ctx = {1, 2, 3, 40, 9, 2, 3, 50, 1, 2, 3};
  EXPECT_EQ(propose(p, ctx, 1), (std::vector<int32_t>{40}));
  PromptLookup two(1, 2);
  EXPECT_EQ(propose(two, ctx, 1), (std::vector<int32_t>{50}));
}

TEST(PromptLookup, NothingWithoutAMatchOrRoom) {
  PromptLookup p(2, 4);
  EXPECT_TRUE(propose(p, {1, 2, 3, 4, 5}, 4).empty());  // no repeated bigram
  EXPECT_TRUE(propose(p, {}, 4).empty());
  EXPECT_TRUE(propose(p, {7}, 4).empty());
  EXPECT_TRUE(propose(p, {1, 2, 1, 2}, 0).empty());  // max_tokens 0
  // A unigram match is below min_ngram 2.
  EXPECT_TRUE(propose(p, {3, 8, 1, 3}, 4).empty());
  PromptLookup uni(1, 4);
  EXPECT_EQ(propose(uni, {3, 8, 1, 3}, 4), (std::vector<int32_t>{8, 1, 3}));
}

TEST(PromptLookup, BadSizesAreRefused) {
  EXPECT_THROW(PromptLookup(0, 3), Error);
  EXPECT_THROW(PromptLookup(3, 2), Error);
}

}  // namespace
}  // namespace nbits::speculative
