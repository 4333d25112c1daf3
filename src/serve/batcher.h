// DecodeBatcher: the decode steps of concurrent sessions as one batched step
// (nbits::generate_next_tokens: one pass of the model with a row per session, the weights read
// once for all). A session in its decode loop holds a Member; its step() joins the current
// batch. The batch runs when every member has joined, or `wait` after the first joined (a member
// busy elsewhere, e.g. writing to a slow client, does not hold the others up longer); the member
// whose join (or timeout) completes it leads: it runs the batch on its thread while the others
// wait for their token. Off (or one member): each step runs alone at once.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "nbits/nbits.h"

namespace nbits::serve {

class DecodeBatcher {
 public:
  // run: one decode step for every generator given (generate_next_tokens, inside a turn).
  using RunBatch = std::function<void(std::span<Generator* const>)>;
  explicit DecodeBatcher(RunBatch run, bool on = true,
                         std::chrono::microseconds wait = std::chrono::microseconds(2000));
  DecodeBatcher(const DecodeBatcher&) = delete;
  DecodeBatcher& operator=(const DecodeBatcher&) = delete;

  class Member {
   public:
    explicit Member(DecodeBatcher& b);
    ~Member();
    Member(const Member&) = delete;
    Member& operator=(const Member&) = delete;
    // g.generate_next_token(), batched with the other members' steps; rethrows its row's error.
    void step(Generator& g) { b_->step(g); }

   private:
    DecodeBatcher* b_;
  };

  uint64_t steps() const { return steps_.load(); }  // batched runs
  uint64_t rows() const { return rows_.load(); }    // decode steps in them

 private:
  struct Batch {
    std::vector<Generator*> gens;
    std::vector<std::exception_ptr> errors;
    bool taken = false, done = false;
  };
  void step(Generator& g);
  void lead(Batch& b);

  RunBatch run_;
  bool on_;
  std::chrono::microseconds wait_;
  std::mutex mu_;
  std::condition_variable cv_;
  int members_ = 0;
  std::shared_ptr<Batch> open_;  // the batch being joined
  std::atomic<uint64_t> steps_{0}, rows_{0};
};

}  // namespace nbits::serve
