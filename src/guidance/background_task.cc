#include "guidance/background_task.h"

#include <utility>

namespace nbits::guidance {

BackgroundTask::BackgroundTask() : thread_([this] { loop(); }) {}

BackgroundTask::~BackgroundTask() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return !busy_; });
    quit_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void BackgroundTask::start(std::function<void()> job) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return !busy_; });
  job_ = std::move(job);
  error_ = nullptr;
  busy_ = true;
  lock.unlock();
  cv_.notify_all();
}

void BackgroundTask::wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return !busy_; });
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void BackgroundTask::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return busy_ || quit_; });
    if (!busy_) return;  // quit_ with nothing to run
    std::function<void()> job = std::move(job_);
    lock.unlock();
    std::exception_ptr err;
    try {
      job();
    } catch (...) {
      err = std::current_exception();
    }
    lock.lock();
    error_ = err;
    busy_ = false;
    cv_.notify_all();
  }
}

}  // namespace nbits::guidance
