// Counts global operator new calls in the test binary (see alloc_counter.cc).
#pragma once

#include <cstdint>

namespace nbits::testing {

// Number of operator new calls so far (all threads).
int64_t allocation_count();

}  // namespace nbits::testing
