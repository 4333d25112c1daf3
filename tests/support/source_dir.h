// Where the checkout is (tests/support/source_dir.cc holds the one copy of the path).
#pragma once

namespace nbits::testing {

const char* source_dir();

}  // namespace nbits::testing
