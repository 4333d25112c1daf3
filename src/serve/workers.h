// The threads that run the routes and produce the responses (generation included), so the
// I/O thread never waits on the model: at most `max_threads`, started as work arrives and kept.
// Jobs beyond them wait in order; the server bounds how many can be outstanding (one request
// per connection, --connections), so the queue is bounded too.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace nbits::serve {

class WorkerPool {
 public:
  explicit WorkerPool(size_t max_threads) : max_(max_threads < 1 ? 1 : max_threads) {}
  ~WorkerPool() { join(); }
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void post(std::function<void()> job);
  // Runs what was posted, then ends the threads (no post after this).
  void join();
  size_t threads() const;

 private:
  void work();
  const size_t max_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool stop_ = false;
};

}  // namespace nbits::serve
