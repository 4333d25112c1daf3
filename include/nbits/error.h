// nbits::Error: what every nbits call throws for a failure the caller can cause
// (a missing or malformed file, an unsupported op, a bad argument), with one
// line naming the problem.
#pragma once

#include <stdexcept>
#include <string>

namespace nbits {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace nbits
