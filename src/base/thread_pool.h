// Persistent worker threads. parallel_for(n, fn) runs fn(task) for every task
// in [0, n) on the calling thread plus the workers, and returns when all are
// done. It allocates nothing per call. With 1 thread everything runs inline.
//
// Latency: a decode step issues ~150 short parallel calls, so workers spin
// (with pause) for a while after each call before sleeping on a futex, and the
// caller spins for the last worker the same way: a call costs about a cache
// line round trip when the pool is busy, a futex wake when it was idle. The
// spin budget adapts (0..200 us) so oversubscribed machines do not spin.
// Calls from several threads are serialised: each takes the whole pool in turn
// (sessions forked from one model share its pool). Calls from inside a task run inline.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace nbits {

class ThreadPool {
 public:
  // num_threads counts the caller; 0 means "all hardware threads".
  explicit ThreadPool(int num_threads = 1);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  template <typename F>
  void parallel_for(int64_t num_tasks, F&& fn) {
    if (num_tasks <= 0) return;
    if (num_threads_ == 1 || num_tasks == 1 || in_task_) {
      for (int64_t i = 0; i < num_tasks; ++i) fn(i);
      return;
    }
    using Fn = std::remove_reference_t<F>;
    run(
        num_tasks, [](void* ctx, int64_t i) { (*static_cast<Fn*>(ctx))(i); },
        const_cast<void*>(static_cast<const void*>(&fn)));
  }

  // Splits [0, n) into contiguous chunks of `align` (the last may be shorter)
  // and gives each thread about the same number of chunks: fn(begin, end).
  template <typename F>
  void parallel_range(int64_t n, int64_t align, F&& fn) {
    if (n <= 0) return;
    const int64_t chunks = (n + align - 1) / align;
    const int64_t parts = std::min<int64_t>(chunks, num_threads_);
    parallel_for(parts, [&](int64_t p) {
      const int64_t c0 = chunks * p / parts, c1 = chunks * (p + 1) / parts;
      const int64_t b = c0 * align, e = std::min(n, c1 * align);
      if (b < e) fn(b, e);
    });
  }

 private:
  using Call = void (*)(void*, int64_t);
  void run(int64_t num_tasks, Call call, void* ctx);
  void worker_loop();
  void drain();

  int num_threads_ = 1;
  std::vector<std::thread> workers_;
  std::mutex caller_mutex_;  // one parallel call at a time
  // The current job, published by a release increment of generation_.
  Call call_ = nullptr;
  void* ctx_ = nullptr;
  int64_t num_tasks_ = 0;
  alignas(64) std::atomic<uint32_t> generation_{0};  // 32-bit: a plain futex word
  std::atomic<int> sleepers_{0};                     // workers blocked in generation_.wait
  std::atomic<bool> stop_{false};
  alignas(64) std::atomic<int64_t> next_{0};
  alignas(64) std::atomic<int> pending_{0};  // workers not yet done with the current job
  std::atomic<bool> caller_sleeping_{false};
  std::atomic<int> spin_us_{50};  // adaptive spin budget (thread_pool.cc)
  static thread_local bool in_task_;
};

}  // namespace nbits
