// The HTTP layer's limits and a departed client noticed without writing.
#pragma once

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace nbits::serve {

// cpp-httplib's task queue (one job per accepted connection, run to the connection's end),
// bounded: `threads` connection threads, at most `waiting` connections queued for one; a
// connection beyond that goes to a small reject lane whose threads answer its request with
// 503 (rejecting() is true there: the server's pre-routing handler answers it) and close it.
// A connection that finds the lane full waits up to `grace` for room first (enqueue runs on
// the accept thread, so the connections behind it wait in the listen backlog meanwhile): a
// burst of connects that close at once is drained by the threads in microseconds each, and
// the request behind the burst is served instead of refused.
// httplib 0.11's ThreadPool queues without a bound and its enqueue() cannot refuse.
class BoundedTaskQueue : public httplib::TaskQueue {
 public:
  BoundedTaskQueue(size_t threads, size_t waiting, size_t reject_threads = 2,
                   std::chrono::milliseconds grace = std::chrono::milliseconds(250));
  ~BoundedTaskQueue() override;
  void enqueue(std::function<void()> fn) override;
  void shutdown() override;
  // True on a reject-lane thread: the request it reads gets 503 and the connection closes.
  static bool rejecting();

 private:
  struct Lane {
    std::deque<std::function<void()>> jobs;
    std::vector<std::thread> threads;
    size_t idle = 0;
  };
  void work(Lane& lane, bool reject);
  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable room_;  // a main-lane thread became idle
  Lane main_, reject_;
  size_t waiting_ = 0;
  std::chrono::milliseconds grace_;
  bool stop_ = false;
};

// cpp-httplib 0.11 listens with a backlog of 5 (compiled into Debian's library): a burst of
// connects beyond it loses SYNs, each costing its client a 1 s retransmit. Re-listens this
// process's listening socket on `port` with `backlog` (Linux updates a listening socket's
// backlog in place); false when no such socket was found.
bool widen_listen_backlog(int port, int backlog);

// The socket of the connection that sent `req` (its 4-tuple matched among this process's
// sockets), or -1. Looked up once per request, from the connection's own thread.
int find_socket(const httplib::Request& req);
// False once the peer of `fd` has closed or reset the connection (a readable EOF), without
// consuming anything; true for fd < 0.
bool peer_open(int fd);

}  // namespace nbits::serve
