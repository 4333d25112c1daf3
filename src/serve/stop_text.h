// Stop strings over streamed text: text that could be the start of a stop string is
// held back until it is known not to be; the stop string itself is never emitted.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace nbits::serve {

class StopText {
 public:
  explicit StopText(std::vector<std::string> stops);
  // Adds a piece; returns the text now safe to emit. After a stop string is found,
  // stopped() is true and later pieces are dropped.
  std::string push(std::string_view piece);
  std::string flush();  // what was held back (the stream ended without a stop)
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace nbits::serve
