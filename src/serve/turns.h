// Who computes next: sessions share one Model and its worker pool, so their steps take turns.
// A decode step is a shared turn (decode steps of several sessions run at once and interleave
// per parallel section, as the pool does by itself); a prefill chunk is an exclusive turn.
// Turns are granted first come, first served: a session that prefills a long prompt queues
// again behind every decode step that arrived during its chunk, so no stream waits longer
// than one chunk (plus a step) for its next token, and a prefill is not starved by decodes.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>

namespace nbits::serve {

class Turns {
 public:
  // Off: every turn is granted at once (one worker thread: the pool runs each session's work
  // inline on its own thread, and sessions compute in parallel on the cores).
  explicit Turns(bool on = true) : on_(on) {}

  class Turn {
   public:
    Turn(Turns& t, bool exclusive) : t_(&t), exclusive_(exclusive) { t.acquire(exclusive); }
    ~Turn() { t_->release(exclusive_); }
    Turn(const Turn&) = delete;
    Turn& operator=(const Turn&) = delete;

   private:
    Turns* t_;
    bool exclusive_;
  };
  Turn decode() { return Turn(*this, false); }
  Turn prefill() { return Turn(*this, true); }

 private:
  void acquire(bool exclusive);
  void release(bool exclusive);

  bool on_;
  struct Waiter {
    uint64_t ticket;
    bool exclusive;
  };
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Waiter> queue_;
  uint64_t next_ticket_ = 0;
  int shared_ = 0;          // decode steps running
  bool exclusive_ = false;  // a prefill chunk running
};

}  // namespace nbits::serve
