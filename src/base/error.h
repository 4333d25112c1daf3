// Errors: every failure the user can cause (bad file, bad flag, unsupported op)
// is reported by throwing nbits::Error with one clear line naming the problem.
// Programming errors inside the library use NBITS_ASSERT.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "nbits/error.h"

namespace nbits {

namespace detail {
template <typename... Args>
std::string concat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}
}  // namespace detail

// Throws nbits::Error whose message is the concatenation of the arguments.
template <typename... Args>
[[noreturn]] void fail(Args&&... args) {
  throw Error(detail::concat(std::forward<Args>(args)...));
}

}  // namespace nbits

// NBITS_CHECK(cond, "message parts", value, ...): user-facing validation.
#define NBITS_CHECK(cond, ...)               \
  do {                                       \
    if (!(cond)) ::nbits::fail(__VA_ARGS__); \
  } while (0)

// NBITS_ASSERT(cond): internal invariant; a failure is a bug in nbits.
#define NBITS_ASSERT(cond)                                                                         \
  do {                                                                                             \
    if (!(cond)) ::nbits::fail("internal error: ", #cond, " failed at ", __FILE__, ":", __LINE__); \
  } while (0)
