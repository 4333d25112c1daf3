#include "serve/connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace nbits::serve {
namespace {
thread_local bool t_rejecting = false;
}

BoundedTaskQueue::BoundedTaskQueue(size_t threads, size_t waiting, size_t reject_threads,
                                   std::chrono::milliseconds grace)
    : waiting_(waiting), grace_(grace) {
  for (size_t i = 0; i < threads; ++i) main_.threads.emplace_back([this] { work(main_, false); });
  for (size_t i = 0; i < reject_threads; ++i) reject_.threads.emplace_back([this] { work(reject_, true); });
}

BoundedTaskQueue::~BoundedTaskQueue() { shutdown(); }

bool BoundedTaskQueue::rejecting() { return t_rejecting; }

void BoundedTaskQueue::enqueue(std::function<void()> fn) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    // Queued beyond the idle threads: at most `waiting_` may wait.
    const auto room = [&] { return stop_ || main_.jobs.size() + 1 <= main_.idle + waiting_; };
    if (room_.wait_for(lock, grace_, room) && !stop_)
      main_.jobs.push_back(std::move(fn));
    else
      reject_.jobs.push_back(std::move(fn));
  }
  cv_.notify_all();
}

void BoundedTaskQueue::work(Lane& lane, bool reject) {
  t_rejecting = reject;
  for (;;) {
    std::function<void()> fn;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ++lane.idle;
      if (!reject) room_.notify_one();
      cv_.wait(lock, [&] { return stop_ || !lane.jobs.empty(); });
      --lane.idle;
      if (lane.jobs.empty()) return;  // stop_, and nothing left
      fn = std::move(lane.jobs.front());
      lane.jobs.pop_front();
    }
    fn();
  }
}

void BoundedTaskQueue::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ && main_.threads.empty()) return;
    stop_ = true;
  }
  cv_.notify_all();
  room_.notify_all();
  for (Lane* l : {&main_, &reject_}) {
    for (auto& t : l->threads) t.join();
    l->threads.clear();
  }
}

namespace {

// "a.b.c.d" / "::1" and a port, as getsockname/getpeername report them.
bool same_endpoint(const sockaddr_storage& sa, const std::string& addr, int port) {
  char buf[INET6_ADDRSTRLEN] = {};
  int p = -1;
  if (sa.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&sa);
    inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf);
    p = ntohs(in->sin_port);
  } else if (sa.ss_family == AF_INET6) {
    const auto* in = reinterpret_cast<const sockaddr_in6*>(&sa);
    inet_ntop(AF_INET6, &in->sin6_addr, buf, sizeof buf);
    p = ntohs(in->sin6_port);
  } else {
    return false;
  }
  return p == port && addr == buf;
}

}  // namespace

// Calls fn(fd) for every socket descriptor of this process (fd >= 3) until it returns true.
template <class Fn>
int for_each_socket(Fn fn) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    char* rest = nullptr;
    const long v = std::strtol(name.c_str(), &rest, 10);
    if (rest == name.c_str() || *rest != 0 || v < 3) continue;
    if (fn(static_cast<int>(v))) return static_cast<int>(v);
  }
  return -1;
}

bool widen_listen_backlog(int port, int backlog) {
  const int fd = for_each_socket([&](int s) {
    int listening = 0;
    socklen_t len = sizeof listening;
    if (getsockopt(s, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening) return false;
    sockaddr_storage local{};
    socklen_t n = sizeof local;
    if (getsockname(s, reinterpret_cast<sockaddr*>(&local), &n) != 0) return false;
    const int p = local.ss_family == AF_INET ? ntohs(reinterpret_cast<const sockaddr_in*>(&local)->sin_port)
                  : local.ss_family == AF_INET6
                      ? ntohs(reinterpret_cast<const sockaddr_in6*>(&local)->sin6_port)
                      : -1;
    return p == port;
  });
  return fd >= 0 && ::listen(fd, backlog) == 0;
}

int find_socket(const httplib::Request& req) {
  if (req.remote_port <= 0 || req.local_port <= 0) return -1;
  return for_each_socket([&](int fd) {
    sockaddr_storage peer{}, local{};
    socklen_t n = sizeof peer;
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &n) != 0) return false;
    if (!same_endpoint(peer, req.remote_addr, req.remote_port)) return false;
    n = sizeof local;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &n) != 0) return false;
    return same_endpoint(local, req.local_addr, req.local_port);
  });
}

bool peer_open(int fd) {
  if (fd < 0) return true;
  char c;
  const ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return true;
  if (n == 0) return false;
  return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

}  // namespace nbits::serve
