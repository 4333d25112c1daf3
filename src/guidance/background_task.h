// One job at a time on a thread of its own: start() hands it a job, wait() returns once it ran.
// The guidance room computes the next token mask here while the model runs the step it is for.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace nbits::guidance {

class BackgroundTask {
 public:
  BackgroundTask();
  ~BackgroundTask();  // waits for a running job
  BackgroundTask(const BackgroundTask&) = delete;
  BackgroundTask& operator=(const BackgroundTask&) = delete;

  // Runs `job` on the thread; waits for the previous job first.
  void start(std::function<void()> job);
  // Waits for the job start() gave; rethrows what it threw. Returns at once when none is running.
  void wait();

 private:
  void loop();
  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> job_;
  bool busy_ = false, quit_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace nbits::guidance
