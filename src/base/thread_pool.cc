#include "base/thread_pool.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace nbits {

namespace {

// Spin budget bounds. The budget adapts: it doubles each time the caller's
// wait for the workers ends while spinning and halves each time it had to
// sleep, so a dedicated machine spins (low latency) and an oversubscribed one,
// where the awaited thread is not running, quickly stops burning the CPU it needs.
constexpr int kMaxSpinUs = 200;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__riscv) || defined(__aarch64__)
  __asm__ volatile("" ::: "memory");
#endif
}

// Spins until pred() or `us` microseconds elapsed; true if pred() held.
template <typename Pred>
bool spin_until(Pred pred, int us) {
  if (pred()) return true;
  if (us <= 0) return false;
  const auto start = std::chrono::steady_clock::now();
  const auto limit = std::chrono::microseconds(us);
  for (int i = 1;; ++i) {
    if (pred()) return true;
    cpu_relax();
    if ((i & 31) == 0 && std::chrono::steady_clock::now() - start > limit) return pred();
  }
}

}  // namespace

thread_local bool ThreadPool::in_task_ = false;

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads <= 0) num_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  num_threads_ = num_threads;
  workers_.reserve(static_cast<size_t>(num_threads_ - 1));
  for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_seq_cst);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  generation_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::drain() {
  in_task_ = true;
  for (;;) {
    const int64_t i = next_.fetch_add(1, std::memory_order_relaxed);
    if (i >= num_tasks_) break;
    call_(ctx_, i);
  }
  in_task_ = false;
}

void ThreadPool::run(int64_t num_tasks, Call call, void* ctx) {
  // Callers on different threads (sessions sharing one pool) take turns.
  std::lock_guard<std::mutex> turn(caller_mutex_);
  call_ = call;
  ctx_ = ctx;
  num_tasks_ = num_tasks;
  next_.store(0, std::memory_order_relaxed);
  pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  // seq_cst pairs with the worker's sleepers_ increment (no lost wake-up).
  generation_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) generation_.notify_all();
  drain();
  auto done = [this] { return pending_.load(std::memory_order_acquire) == 0; };
  const int budget = spin_us_.load(std::memory_order_relaxed);
  if (spin_until(done, budget)) {
    if (budget < kMaxSpinUs) spin_us_.store(std::min(kMaxSpinUs, 2 * budget + 1), std::memory_order_relaxed);
    return;
  }
  spin_us_.store(budget / 2, std::memory_order_relaxed);
  caller_sleeping_.store(true, std::memory_order_seq_cst);
  for (int p; (p = pending_.load(std::memory_order_seq_cst)) != 0;)
    pending_.wait(p, std::memory_order_seq_cst);
  caller_sleeping_.store(false, std::memory_order_relaxed);
}

void ThreadPool::worker_loop() {
  uint32_t seen = 0;
  for (;;) {
    auto changed = [&] { return generation_.load(std::memory_order_acquire) != seen; };
    if (!spin_until(changed, spin_us_.load(std::memory_order_relaxed))) {
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      while (generation_.load(std::memory_order_seq_cst) == seen)
        generation_.wait(seen, std::memory_order_seq_cst);
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_acquire)) return;
    drain();
    if (pending_.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
        caller_sleeping_.load(std::memory_order_seq_cst))
      pending_.notify_one();
  }
}

}  // namespace nbits
