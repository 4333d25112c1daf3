#include "serve/batcher.h"

namespace nbits::serve {

DecodeBatcher::DecodeBatcher(RunBatch run, bool on, std::chrono::microseconds wait)
    : run_(std::move(run)), on_(on), wait_(wait) {}

DecodeBatcher::Member::Member(DecodeBatcher& b) : b_(&b) {
  std::lock_guard<std::mutex> lock(b.mu_);
  ++b.members_;
}

DecodeBatcher::Member::~Member() {
  std::lock_guard<std::mutex> lock(b_->mu_);
  --b_->members_;
  b_->cv_.notify_all();  // a batch waiting for this member may be complete now
}

void DecodeBatcher::step(Generator& g) {
  if (!on_) {
    Generator* one = &g;
    run_(std::span<Generator* const>(&one, 1));
    ++steps_;
    ++rows_;
    return;
  }
  std::unique_lock<std::mutex> lock(mu_);
  if (!open_) open_ = std::make_shared<Batch>();
  const std::shared_ptr<Batch> b = open_;
  const size_t row = b->gens.size();
  b->gens.push_back(&g);
  const auto deadline = std::chrono::steady_clock::now() + wait_;
  const auto complete = [&] { return b->gens.size() >= static_cast<size_t>(members_); };
  cv_.wait_until(lock, deadline, [&] { return b->taken || complete(); });
  if (!b->taken) {  // complete, or waited long enough: this member runs it
    b->taken = true;
    if (open_ == b) open_.reset();
    lock.unlock();
    lead(*b);
    lock.lock();
    b->done = true;
    cv_.notify_all();
  } else {
    cv_.wait(lock, [&] { return b->done; });
  }
  if (b->errors[row]) std::rethrow_exception(b->errors[row]);
}

// Runs outside the lock: the batch is taken, nobody else touches it until done.
void DecodeBatcher::lead(Batch& b) {
  b.errors.assign(b.gens.size(), nullptr);
  try {
    run_(b.gens);
    ++steps_;
    rows_ += b.gens.size();
    return;
  } catch (...) {
    if (b.gens.size() == 1) {
      b.errors[0] = std::current_exception();
      return;
    }
  }
  // The batch failed before anything ran (generate_next_tokens checks first): each row alone,
  // so an error stays with its own session.
  for (size_t i = 0; i < b.gens.size(); ++i) {
    try {
      run_(std::span<Generator* const>(&b.gens[i], 1));
      ++steps_;
      ++rows_;
    } catch (...) {
      b.errors[i] = std::current_exception();
    }
  }
}

}  // namespace nbits::serve
