// Session slots: N Generators on one shared Model, each with its own KV cache of the
// full context, a bounded wait queue in front of them, and prompt reuse (a request takes
// the free slot whose conversation shares the longest token prefix with its prompt).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "nbits/nbits.h"

namespace nbits::serve {

class SlotPool {
 public:
  SlotPool(std::shared_ptr<const Model> model, int slots, int64_t context, int queue);

  // Reserves a place for a request (running or waiting); false when `slots + queue` are taken.
  bool admit();
  void unadmit();

  struct Acquired {
    int slot = -1;       // -1: gave up (keep_waiting returned false)
    int64_t common = 0;  // tokens of `prompt` the slot already holds
  };
  // Waits (FIFO) for a free slot and takes the one sharing the longest prefix with `prompt`
  // (ties: least recently used). keep_waiting() is called about every `poll_ms` while waiting.
  Acquired acquire(const std::vector<int32_t>& prompt, const std::function<bool()>& keep_waiting,
                   int poll_ms = 250);
  // Gives the slot back; `tokens` is what its Generator now holds (its sequence()).
  void release(int slot, std::vector<int32_t> tokens);

  Generator& generator(int slot) { return *slots_[static_cast<size_t>(slot)].gen; }
  int size() const { return static_cast<int>(slots_.size()); }
  int64_t context() const { return context_; }
  size_t kv_cache_bytes() const;  // all slots
  int active() const;
  int waiting() const;

 private:
  struct Slot {
    std::unique_ptr<Generator> gen;
    std::vector<int32_t> tokens;
    bool busy = false;
    uint64_t last_used = 0;
  };
  std::vector<Slot> slots_;
  int64_t context_ = 0;
  int queue_ = 0;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int admitted_ = 0;
  std::deque<uint64_t> waiters_;
  uint64_t next_ticket_ = 0, clock_ = 0;
};

}  // namespace nbits::serve
