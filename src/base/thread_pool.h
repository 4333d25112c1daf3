// Persistent worker threads. parallel_for(n, fn) runs fn(task) for every task
// in [0, n) on the calling thread plus the workers, and returns when all are
// done. It allocates nothing per call. With 1 thread everything runs inline.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
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
    if (num_threads_ == 1 || num_tasks == 1) {
      for (int64_t i = 0; i < num_tasks; ++i) fn(i);
      return;
    }
    using Fn = std::remove_reference_t<F>;
    run(num_tasks, [](void* ctx, int64_t i) { (*static_cast<Fn*>(ctx))(i); }, const_cast<void*>(static_cast<const void*>(&fn)));
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
  void worker_loop(int index);
  void drain();

  int num_threads_ = 1;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_start_;
  std::condition_variable cv_done_;
  uint64_t generation_ = 0;
  bool stop_ = false;
  Call call_ = nullptr;
  void* ctx_ = nullptr;
  int64_t num_tasks_ = 0;
  std::atomic<int64_t> next_{0};
  std::atomic<int> active_{0};
};

}  // namespace nbits
