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

// Gives the heap's free pages back to the OS (glibc's malloc_trim; nothing elsewhere), so the RSS
// after a model is destroyed is the program's again: a later measurement in the same process
// (bench's next thread count) then starts from it, not from what the allocator kept.
void release_free_heap();

}  // namespace nbits
