// Monotonic wall-clock timing.
#pragma once

#include <chrono>
#include <cstdint>

namespace nbits {

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class Stopwatch {
 public:
  Stopwatch() : start_(now_ns()) {}
  void restart() { start_ = now_ns(); }
  double elapsed_ms() const { return static_cast<double>(now_ns() - start_) * 1e-6; }
  double elapsed_s() const { return static_cast<double>(now_ns() - start_) * 1e-9; }

 private:
  int64_t start_;
};

}  // namespace nbits
