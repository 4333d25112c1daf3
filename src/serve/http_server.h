// The HTTP/1.1 server under `nbits serve`: Boost.Beast on Asio, event-driven. One I/O thread
// runs every connection asynchronously (accept, reads with a header and a body timeout, header
// and body size limits, keep-alive, writes); the routes run on a WorkerPool (serve/workers.h),
// and a streamed response is written from its worker through the connection (a bounded write
// queue). While a route runs, a read stays outstanding on its socket: the client closing it
// (or a failed write) sets ResponseWriter::client_gone(). Connections beyond
// `max_connections` get the kTooManyConnections response and are closed.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "serve/http.h"

namespace nbits::serve {

struct HttpServerOptions {
  size_t max_body_bytes = 8u << 20;     // larger: kBodyTooLarge (413)
  size_t max_header_bytes = 64u << 10;  // request line + headers; larger: kBadRequest
  int max_connections = 64;             // open connections served at once
  int workers = 8;                      // threads that run routes
  // From the moment a connection waits for a request until its headers are complete; then
  // for the body; for each write. A connection that misses one is closed.
  std::chrono::milliseconds header_timeout{10000}, body_timeout{30000}, write_timeout{30000};
  // A connection beyond max_connections waits this long for one to close before its refusal.
  std::chrono::milliseconds connection_grace{250};
  std::vector<std::pair<std::string, std::string>> default_headers;  // on every response
};

// Responses the server makes itself; the ErrorHandler fills them (status, body).
enum class Refusal { kBadRequest, kBodyTooLarge, kTooManyConnections, kInternal };

class HttpServer {
 public:
  using Handler = std::function<void(const HttpRequest&, HttpResponse&)>;
  using ErrorHandler = std::function<void(Refusal, const std::string& detail, HttpResponse&)>;
  HttpServer(HttpServerOptions options, Handler handler, ErrorHandler error);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Listens on host:port (port 0: any free one; a large backlog); returns the port. Throws
  // nbits::Error when it cannot.
  int listen(const std::string& host, int port);
  void start();  // the I/O thread
  // Any thread: stops accepting and closes the connections waiting for a request; the
  // requests in flight finish (their connections then close).
  void stop();
  // Until every connection has closed and every route has returned (after stop()).
  void wait();

  struct Impl;  // http_server.cc

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace nbits::serve
