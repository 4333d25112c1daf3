// Resident memory of this process (Linux /proc/self/status; zeros elsewhere).
#pragma once

#include <cstddef>

namespace nbits {

struct MemoryStats {
  size_t rss_bytes = 0;   // VmRSS: resident now
  size_t peak_bytes = 0;  // VmHWM: the high-water mark since start or the last reset
};

MemoryStats memory_stats();

// Restarts the high-water mark at the current RSS (writes 5 to
// /proc/self/clear_refs); false when the kernel does not allow it.
bool reset_peak_memory();

}  // namespace nbits
