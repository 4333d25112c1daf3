// Software prefetch of the next panel (group) while the row tiles of this one run: a GEMM reads
// each panel's packed bytes from DRAM once, in its first row tile, and from cache after that, so
// the next panel's bytes are requested in slices, one per row tile of the current panel.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace nbits::kernels {

// Prefetches slice `tile` of `tiles` of the `bytes` bytes at `next` (nothing when next is null).
inline void prefetch_slice(const uint8_t* next, size_t bytes, int64_t tile, int64_t tiles) {
  if (next == nullptr || tiles <= 0) return;
  const size_t lines = bytes / 64,
               per = (lines + static_cast<size_t>(tiles) - 1) / static_cast<size_t>(tiles);
  const size_t l0 = static_cast<size_t>(tile) * per, l1 = std::min(lines, l0 + per);
  for (size_t l = l0; l < l1; ++l) __builtin_prefetch(next + l * 64, 0, 3);
}

}  // namespace nbits::kernels
