#include "serve/http_server.h"

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <condition_variable>
#include <deque>
#include <list>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "nbits/error.h"
#include "serve/workers.h"

namespace nbits::serve {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
using Clock = std::chrono::steady_clock;

std::string HttpRequest::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (beast::iequals(k, beast::string_view(name.data(), name.size()))) return v;
  return "";
}

namespace {

// Unsent bytes a streamed response may queue before its worker waits for the client to read.
constexpr size_t kMaxQueued = 256u << 10;
// Bytes a client may send ahead (a pipelined request) while its request is handled.
constexpr size_t kMaxReadAhead = 64u << 10;
// A connection closed after its response drains what the client still sends (the rest of a
// refused body) so the client reads the response instead of a reset; at most this long.
constexpr std::chrono::milliseconds kDrain{5000};

class Session;

}  // namespace

struct HttpServer::Impl {
  Impl(HttpServerOptions o, Handler h, ErrorHandler e)
      : opt(std::move(o)),
        handler(std::move(h)),
        error(std::move(e)),
        workers(static_cast<size_t>(opt.workers)) {}
  HttpServerOptions opt;
  Handler handler;
  ErrorHandler error;
  asio::io_context ioc{1};
  tcp::acceptor acceptor{ioc};
  asio::steady_timer accept_retry{ioc};
  WorkerPool workers;
  std::thread io;
  // The I/O thread's alone:
  int admitted = 0;  // open connections within max_connections
  int refused = 0;   // the others: beyond it (waiting for their refusal), or closing
  bool accepting = false, stopping = false;
  std::list<std::weak_ptr<Session>> sessions;

  void accept();
  void closed(bool was_admitted, std::list<std::weak_ptr<Session>>::iterator it);
  bool admit() {
    if (admitted >= opt.max_connections) return false;
    ++admitted;
    return true;
  }
};

namespace {

// One connection, driven on the I/O thread; its worker (while a route runs) reaches it only
// through write()/client_gone() (the mutex below) and posts.
class Session : public std::enable_shared_from_this<Session>, public ResponseWriter {
 public:
  Session(HttpServer::Impl& srv, tcp::socket sock, bool admitted)
      : srv_(srv),
        sock_(std::move(sock)),
        read_timer_(srv.ioc),
        write_timer_(srv.ioc),
        admitted_(admitted),
        guard_(asio::make_work_guard(srv.ioc)) {}

  std::list<std::weak_ptr<Session>>::iterator self_it;

  void start() { read_request(); }
  // The server stops: a connection that waits for a request closes now.
  void stop() {
    if (state_ == State::kReading || state_ == State::kIdle) close();
  }

  // ResponseWriter (the worker's thread).
  bool write(std::string chunk) override {
    if (chunk.empty()) return !gone_;
    {
      std::unique_lock<std::mutex> lock(mu_);
      space_.wait(lock, [&] { return gone_ || queued_ < kMaxQueued; });
      if (gone_) return false;
      queued_ += chunk.size();
    }
    asio::post(srv_.ioc, [self = shared_from_this(), c = std::move(chunk)]() mutable {
      self->queue(std::move(c), Kind::kChunk);
    });
    return true;
  }
  bool client_gone() const override { return gone_; }

 private:
  enum class State { kReading, kHandling, kIdle, kClosing, kClosed };
  enum class Kind { kRaw, kChunk, kLast };
  struct Out {
    std::string data;
    Kind kind;
  };

  void arm(asio::steady_timer& t, std::chrono::milliseconds d) {
    t.expires_after(d);
    t.async_wait([self = shared_from_this()](error_code ec) {
      if (!ec) self->close();
    });
  }

  void read_request() {
    state_ = State::kReading;
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(srv_.opt.max_header_bytes));
    parser_->body_limit(srv_.opt.max_body_bytes);
    arm(read_timer_, srv_.opt.header_timeout);
    http::async_read_header(sock_, buf_, *parser_,
                            [self = shared_from_this()](error_code ec, size_t) { self->on_header(ec); });
  }

  // Parse errors answer 400 (413 for a body over the limit); a closed or timed-out connection
  // just closes.
  void on_read_error(error_code ec) {
    if (state_ == State::kClosed) return;
    if (ec == http::error::body_limit) return refuse(Refusal::kBodyTooLarge, "");
    if (ec.category() == http::make_error_code(http::error::bad_target).category() &&
        ec != http::error::end_of_stream && ec != http::error::partial_message)
      return refuse(Refusal::kBadRequest, ec.message());
    close();
  }

  void on_header(error_code ec) {
    if (state_ == State::kClosed) return;
    if (ec) return on_read_error(ec);
    if (!admitted_) {
      // Beyond max_connections: wait a little for one to close (a burst of connects that
      // closed at once is drained in microseconds each), then refuse.
      if (srv_.admit()) {
        admitted_ = true;
        --srv_.refused;
      } else {
        if (!grace_end_) grace_end_ = Clock::now() + srv_.opt.connection_grace;
        if (Clock::now() >= *grace_end_) return refuse(Refusal::kTooManyConnections, "");
        write_timer_.expires_after(std::chrono::milliseconds(10));
        write_timer_.async_wait([self = shared_from_this()](error_code e) {
          if (!e && self->state_ == State::kReading) self->on_header({});
        });
        return;
      }
    }
    if (parser_->is_done()) return on_body({});
    if (beast::iequals(parser_->get()[http::field::expect], "100-continue"))
      queue("HTTP/1.1 100 Continue\r\n\r\n", Kind::kRaw);
    arm(read_timer_, srv_.opt.body_timeout);
    http::async_read(sock_, buf_, *parser_,
                     [self = shared_from_this()](error_code e, size_t) { self->on_body(e); });
  }

  void on_body(error_code ec) {
    if (state_ == State::kClosed) return;
    read_timer_.cancel();
    if (ec) return on_read_error(ec);
    http::request<http::string_body> msg = parser_->release();
    parser_.reset();
    version_ = msg.version();
    keep_alive_ = msg.keep_alive() && !srv_.stopping;
    HttpRequest req;
    req.method = std::string(msg.method_string());
    const std::string target(msg.target().data(), msg.target().size());
    req.path = target.substr(0, target.find('?'));
    for (const auto& f : msg) req.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
    req.body = std::move(msg.body());
    state_ = State::kHandling;
    watch();
    srv_.workers.post([self = shared_from_this(), req = std::move(req)] { self->handle(req); });
  }

  // A read outstanding while the request is handled (and after it, for the next request):
  // EOF or an error means the client has gone; bytes it sends are kept for the next request.
  void watch() {
    if (watching_ || state_ == State::kClosed || (state_ == State::kHandling && buf_.size() >= kMaxReadAhead))
      return;
    watching_ = true;
    sock_.async_read_some(buf_.prepare(4096), [self = shared_from_this()](error_code ec, size_t n) {
      self->watching_ = false;
      // Cancelled by written(): the next request is in the buffer already.
      if (ec == asio::error::operation_aborted && self->state_ == State::kIdle) return self->read_request();
      if (ec) return self->close();
      self->buf_.commit(n);
      if (self->state_ == State::kClosing) self->buf_.consume(self->buf_.size());
      if (self->state_ == State::kIdle)
        self->read_request();
      else
        self->watch();
    });
  }

  // The worker's thread: runs the route, then sends or streams its response.
  void handle(const HttpRequest& req) {
    HttpResponse res;
    try {
      srv_.handler(req, res);
    } catch (const std::exception& e) {
      res = HttpResponse();
      srv_.error(Refusal::kInternal, e.what(), res);
    }
    if (!res.stream) {
      asio::post(srv_.ioc, [self = shared_from_this(), r = std::move(res)]() mutable { self->send(r); });
      return;
    }
    std::function<void(ResponseWriter&)> body = std::move(res.stream);
    res.stream = nullptr;
    asio::post(srv_.ioc, [self = shared_from_this(), r = std::move(res)]() mutable { self->send_head(r); });
    try {
      body(*this);
    } catch (const std::exception&) {
      // The route's own errors are part of its body; anything else ends the response.
    }
    asio::post(srv_.ioc, [self = shared_from_this()] {
      self->queue("", Kind::kLast);
      self->done_ = true;
      self->flush();
    });
  }

  template <class Msg>
  void fill(Msg& m, const HttpResponse& r) {
    for (const auto& [k, v] : srv_.opt.default_headers) m.set(k, v);
    for (const auto& [k, v] : r.headers) m.insert(k, v);
    if (!r.content_type.empty()) m.set(http::field::content_type, r.content_type);
    m.keep_alive(keep_alive_);
  }

  // A whole response. (Beast throws for a response it cannot frame, e.g. a 204 with a body:
  // the connection closes rather than the I/O thread.)
  void send(const HttpResponse& r) {
    std::ostringstream os;
    try {
      http::response<http::string_body> m{static_cast<http::status>(r.status), version_};
      fill(m, r);
      m.body() = r.body;
      if (r.status != 204) m.prepare_payload();
      os << m;
    } catch (const std::exception&) {
      return close();
    }
    queue(std::move(os).str(), Kind::kRaw);
    done_ = true;
    flush();
  }

  // A streamed response's status and headers; its chunks follow.
  void send_head(const HttpResponse& r) {
    chunked_ = version_ >= 11;
    if (!chunked_) keep_alive_ = false;  // HTTP/1.0: the body ends with the connection
    std::ostringstream os;
    try {
      http::response<http::empty_body> m{static_cast<http::status>(r.status), version_};
      fill(m, r);
      if (chunked_) m.chunked(true);
      os << m.base();
    } catch (const std::exception&) {
      return close();
    }
    queue(std::move(os).str(), Kind::kRaw);
  }

  void queue(std::string data, Kind kind) {
    if (state_ == State::kClosed) return;
    if (kind == Kind::kChunk && !chunked_) kind = Kind::kRaw;
    if (kind == Kind::kLast && !chunked_) return;
    out_.push_back({std::move(data), kind});
    flush();
  }

  void flush() {
    if (writing_ || state_ == State::kClosed) return;
    if (out_.empty()) {
      if (done_) written();
      return;
    }
    writing_ = true;
    arm(write_timer_, srv_.opt.write_timeout);
    auto on_write = [self = shared_from_this()](error_code ec, size_t) { self->on_write(ec); };
    const Out& o = out_.front();
    switch (o.kind) {
      case Kind::kRaw:
        asio::async_write(sock_, asio::buffer(o.data), on_write);
        break;
      case Kind::kChunk:
        asio::async_write(sock_, http::make_chunk(asio::buffer(o.data)), on_write);
        break;
      case Kind::kLast:
        asio::async_write(sock_, http::make_chunk_last(), on_write);
        break;
    }
  }

  void on_write(error_code ec) {
    writing_ = false;
    write_timer_.cancel();
    if (ec || state_ == State::kClosed) return close();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (out_.front().kind == Kind::kChunk) queued_ -= out_.front().data.size();
    }
    space_.notify_all();
    out_.pop_front();
    flush();
  }

  // The whole response is out: the next request, or a close.
  void written() {
    done_ = false;
    if (!keep_alive_ || srv_.stopping) return linger();
    state_ = State::kIdle;
    if (!watching_) return read_request();
    if (buf_.size() > 0) {
      error_code ec;
      sock_.cancel(ec);  // a pipelined request came during the response: the watch read ends, it is read
      return;
    }
    arm(read_timer_, srv_.opt.header_timeout);  // the watch read waits for the next request
  }

  // Refused before routing: the response, then a close.
  void refuse(Refusal why, const std::string& detail) {
    HttpResponse res;
    srv_.error(why, detail, res);
    keep_alive_ = false;
    state_ = State::kHandling;
    send(res);
  }

  // After the last response: no more sends, and what the client still sends is read and
  // dropped (a refused body) until it closes, for at most kDrain.
  // It stops counting as an open connection (it still counts against the accept limit).
  void linger() {
    state_ = State::kClosing;
    if (admitted_) {
      admitted_ = false;
      --srv_.admitted;
      ++srv_.refused;
    }
    error_code ec;
    sock_.shutdown(tcp::socket::shutdown_send, ec);
    buf_.consume(buf_.size());
    arm(read_timer_, srv_.stopping ? std::chrono::milliseconds(1000) : kDrain);
    watch();
  }

  void close() {
    if (state_ == State::kClosed) return;
    state_ = State::kClosed;
    {
      std::lock_guard<std::mutex> lock(mu_);
      gone_ = true;
    }
    space_.notify_all();
    error_code ec;
    read_timer_.cancel();
    write_timer_.cancel();
    sock_.close(ec);
    out_.clear();
    srv_.closed(admitted_, self_it);
    guard_.reset();
  }

  HttpServer::Impl& srv_;
  tcp::socket sock_;
  asio::steady_timer read_timer_, write_timer_;
  beast::flat_buffer buf_;
  std::optional<http::request_parser<http::string_body>> parser_;
  bool admitted_;
  std::optional<Clock::time_point> grace_end_;
  State state_ = State::kReading;
  unsigned version_ = 11;
  bool keep_alive_ = false, chunked_ = true, watching_ = false, writing_ = false, done_ = false;
  std::deque<Out> out_;
  // Shared with the worker.
  std::mutex mu_;
  std::condition_variable space_;
  size_t queued_ = 0;
  std::atomic<bool> gone_{false};
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
};

}  // namespace

void HttpServer::Impl::accept() {
  // Beyond max_connections a few more are accepted, to be refused; beyond those the
  // connections wait in the listen backlog.
  if (accepting || stopping || admitted + refused >= opt.max_connections + 64) return;
  accepting = true;
  acceptor.async_accept([self = this](error_code ec, tcp::socket sock) {
    self->accepting = false;
    if (self->stopping) return;
    if (ec) {
      // Out of descriptors, or a connection reset before it was accepted: try again shortly.
      self->accept_retry.expires_after(std::chrono::milliseconds(50));
      self->accept_retry.async_wait([self](error_code e) {
        if (!e) self->accept();
      });
      return;
    }
    error_code e;
    sock.set_option(tcp::no_delay(true), e);
    const bool in = self->admit();
    if (!in) ++self->refused;
    auto s = std::make_shared<Session>(*self, std::move(sock), in);
    self->sessions.push_front(s);
    s->self_it = self->sessions.begin();
    s->start();
    self->accept();
  });
}

void HttpServer::Impl::closed(bool was_admitted, std::list<std::weak_ptr<Session>>::iterator it) {
  --(was_admitted ? admitted : refused);
  sessions.erase(it);
  accept();
}

HttpServer::HttpServer(HttpServerOptions options, Handler handler, ErrorHandler error)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler), std::move(error))) {}

HttpServer::~HttpServer() {
  stop();
  wait();
}

int HttpServer::listen(const std::string& host, int port) {
  error_code ec;
  tcp::resolver resolver(impl_->ioc);
  const auto found = resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
  if (ec || found.empty()) throw Error("cannot listen on " + host + ": " + ec.message());
  const tcp::endpoint ep = found.begin()->endpoint();
  tcp::acceptor& a = impl_->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    error_code ignored;
    a.close(ignored);
    throw Error("cannot listen on " + host + ":" + std::to_string(port) + " (" + ec.message() + ")");
  }
  return a.local_endpoint().port();
}

void HttpServer::start() {
  Impl* impl = impl_.get();
  asio::post(impl->ioc, [impl] { impl->accept(); });
  impl->io = std::thread([impl] { impl->ioc.run(); });
}

void HttpServer::stop() {
  asio::post(impl_->ioc, [impl = impl_.get()] {
    if (impl->stopping) return;
    impl->stopping = true;
    error_code ec;
    impl->acceptor.close(ec);
    impl->accept_retry.cancel();
    for (auto it = impl->sessions.begin(); it != impl->sessions.end();) {
      auto s = (it++)->lock();  // stop() may erase the entry
      if (s) s->stop();
    }
  });
}

void HttpServer::wait() {
  if (impl_->io.joinable()) impl_->io.join();
  impl_->workers.join();
}

}  // namespace nbits::serve
