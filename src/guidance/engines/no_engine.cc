// The guidance room without an engine (built where cargo was missing: cmake/room_guidance.cmake
// says why at configure time). Every request for constrained output gets this one error.
#include "base/error.h"
#include "guidance/guidance.h"

namespace nbits::guidance {
namespace {

[[noreturn]] void unavailable() {
  fail(
      "constrained decoding (JSON schemas, regexes, grammars) is not in this build of nbits: it needs "
      "llguidance, built through cargo (install Rust's cargo and configure again)");
}

}  // namespace

bool available() { return false; }
std::string engine() { return "none (built without cargo)"; }

std::shared_ptr<const Vocabulary> make_vocabulary(const Tokenizer&, int64_t, std::span<const int32_t>,
                                                  const Limits&) {
  unavailable();
}
std::shared_ptr<llm::TokenConstraint> make_constraint(std::shared_ptr<const Vocabulary>, const Spec&) {
  unavailable();
}
std::string check(const Vocabulary&, const Spec&) { unavailable(); }

}  // namespace nbits::guidance
