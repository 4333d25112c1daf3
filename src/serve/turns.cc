#include "serve/turns.h"

namespace nbits::serve {

void Turns::acquire(bool exclusive) {
  if (!on_) return;
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t ticket = next_ticket_++;
  queue_.push_back({ticket, exclusive});
  // The head of the queue goes when it can; a shared head that goes lets the next shared one
  // go too (notify_all), so consecutive decode steps run together.
  cv_.wait(lock, [&] {
    if (queue_.front().ticket != ticket) return false;
    return exclusive ? !exclusive_ && shared_ == 0 : !exclusive_;
  });
  queue_.pop_front();
  if (exclusive)
    exclusive_ = true;
  else
    ++shared_;
  cv_.notify_all();
}

void Turns::release(bool exclusive) {
  if (!on_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (exclusive)
    exclusive_ = false;
  else
    --shared_;
  cv_.notify_all();
}

}  // namespace nbits::serve
