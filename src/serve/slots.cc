#include "serve/slots.h"

#include <algorithm>
#include <chrono>

namespace nbits::serve {

SlotPool::SlotPool(std::shared_ptr<const Model> model, int slots, int64_t context, int queue)
    : queue_(queue) {
  GenerationOptions go;
  go.context = context;
  slots_.resize(static_cast<size_t>(std::max(slots, 1)));
  for (auto& s : slots_) s.gen = std::make_unique<Generator>(model, go);
  context_ = slots_[0].gen->capacity();
}

bool SlotPool::admit() {
  std::lock_guard<std::mutex> lock(mu_);
  if (admitted_ >= size() + queue_) return false;
  ++admitted_;
  return true;
}

void SlotPool::unadmit() {
  std::lock_guard<std::mutex> lock(mu_);
  --admitted_;
}

SlotPool::Acquired SlotPool::acquire(const std::vector<int32_t>& prompt,
                                     const std::function<bool()>& keep_waiting, int poll_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t ticket = next_ticket_++;
  waiters_.push_back(ticket);
  for (;;) {
    // The first `free` waiters may go.
    size_t free = 0;
    for (const auto& s : slots_) free += s.busy ? 0 : 1;
    const auto pos =
        static_cast<size_t>(std::find(waiters_.begin(), waiters_.end(), ticket) - waiters_.begin());
    if (pos < free) break;
    lock.unlock();
    const bool go_on = keep_waiting();
    lock.lock();
    if (!go_on) {
      waiters_.erase(std::find(waiters_.begin(), waiters_.end(), ticket));
      cv_.notify_all();
      return {};
    }
    cv_.wait_for(lock, std::chrono::milliseconds(poll_ms));
  }
  waiters_.erase(std::find(waiters_.begin(), waiters_.end(), ticket));
  Acquired best;
  uint64_t best_used = 0;
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& s = slots_[i];
    if (s.busy) continue;
    const size_t n = std::min(s.tokens.size(), prompt.size());
    const auto common = static_cast<int64_t>(
        std::mismatch(prompt.begin(), prompt.begin() + static_cast<ptrdiff_t>(n), s.tokens.begin()).first -
        prompt.begin());
    if (best.slot < 0 || common > best.common || (common == best.common && s.last_used < best_used)) {
      best.slot = static_cast<int>(i);
      best.common = common;
      best_used = s.last_used;
    }
  }
  slots_[static_cast<size_t>(best.slot)].busy = true;
  cv_.notify_all();
  return best;
}

void SlotPool::release(int slot, std::vector<int32_t> tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  Slot& s = slots_[static_cast<size_t>(slot)];
  s.tokens = std::move(tokens);
  s.busy = false;
  s.last_used = ++clock_;
  cv_.notify_all();
}

size_t SlotPool::kv_cache_bytes() const {
  size_t total = 0;
  for (const auto& s : slots_) total += s.gen->kv_cache_bytes();
  return total;
}

int SlotPool::active() const {
  std::lock_guard<std::mutex> lock(mu_);
  int n = 0;
  for (const auto& s : slots_) n += s.busy ? 1 : 0;
  return n;
}

int SlotPool::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(waiters_.size());
}

}  // namespace nbits::serve
