// The transport seen by the routes (server.cc): a request, a response, and a writer that
// streams a response's body from a worker thread. The HTTP library (Boost.Beast) stays behind
// http_server.h; nothing here names it.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nbits::serve {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // the target without its query
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // The first header named `name` (case-insensitive), or "".
  std::string header(std::string_view name) const;
};

// A response's body written piece by piece (chunked transfer encoding) from a worker thread.
class ResponseWriter {
 public:
  virtual ~ResponseWriter() = default;
  // Queues `chunk` for the client; false once the client has gone (then nothing more is sent).
  // Blocks while too much is queued unsent (the client reads slowly).
  virtual bool write(std::string chunk) = 0;
  // True once the client has closed or reset its connection (or half-closed it), noticed by a
  // read outstanding on the socket while the response is produced, or by a failed write.
  virtual bool client_gone() const = 0;
};

struct HttpResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string content_type = "text/plain";
  std::string body;
  // Set: the body is streamed; the function runs on the worker thread that ran the route, after
  // the status and headers were sent, and the response ends when it returns.
  std::function<void(ResponseWriter&)> stream;

  void set_content(std::string b, std::string type) {
    body = std::move(b);
    content_type = std::move(type);
  }
  void set_header(std::string name, std::string value) {
    headers.emplace_back(std::move(name), std::move(value));
  }
  void set_stream(std::string type, std::function<void(ResponseWriter&)> fn) {
    content_type = std::move(type);
    stream = std::move(fn);
  }
};

}  // namespace nbits::serve
