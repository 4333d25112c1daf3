#include "base/memory_stats.h"

#include <cstdio>
#include <cstring>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace nbits {

MemoryStats memory_stats() {
  MemoryStats m;
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return m;
  char line[256];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    unsigned long long kib = 0;
    if (std::sscanf(line, "VmRSS: %llu kB", &kib) == 1) m.rss_bytes = static_cast<size_t>(kib) << 10;
    if (std::sscanf(line, "VmHWM: %llu kB", &kib) == 1) m.peak_bytes = static_cast<size_t>(kib) << 10;
  }
  std::fclose(f);
  return m;
}

bool reset_peak_memory() {
  std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (f == nullptr) return false;
  const bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

void release_free_heap() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace nbits
