// Memory for large, long-lived, read-mostly buffers (packed weights) that the OS is asked to back
// with 2 MiB pages (Linux transparent huge pages: madvise MADV_HUGEPAGE, which the usual
// `enabled=madvise` setting requires before it gives a process any).
//
// Why: decode reads every weight once per token. With 4 KiB pages that is one TLB entry per 4 KiB
// streamed, more page walks than a core's TLBs hold, and the hardware prefetchers stop at every
// 4 KiB boundary. On an AMD Zen4 core, 1 thread, the Qwen2.5-0.5B-shaped int4 export decoded in
// 16.0-16.9 ms/token on 4 KiB pages and 12.9-14.0 ms on 2 MiB pages (docs/PERFORMANCE.md).
//
// How: buffers are carved in order from 64 MiB chunks (each 2 MiB-aligned and advised as a whole),
// so small weights (a 0.5 MiB attention projection) sit on huge pages too; a buffer of 16 MiB or more
// gets a mapping of its own, advised on its whole 2 MiB pages (its tail stays on small pages, so no
// memory is spent on rounding). The price is at most one partly used 2 MiB page per chunk.
// Freeing gives the buffer's whole pages back at once (MADV_DONTNEED); a chunk is unmapped when its
// last buffer is freed. Space is never reused inside a chunk: this is for weights, which live as
// long as their model, not for scratch.
//
// Plain std::aligned_alloc instead with NBITS_HUGE_PAGES=off, without mmap / madvise (non-Linux),
// and in AddressSanitizer builds (so that overreads of a weight stay caught there).
#pragma once

#include <cstddef>

namespace nbits {

// `bytes` (0 is taken as 1) of uninitialised memory, 64-byte aligned; nullptr when the OS refuses.
void* huge_page_alloc(size_t bytes);
// Frees p (from huge_page_alloc with the same `bytes`; nullptr is ignored).
void huge_page_free(void* p, size_t bytes) noexcept;

// Whether huge_page_alloc uses the chunks (false: NBITS_HUGE_PAGES=off, ASan, no madvise).
bool huge_pages_enabled();

struct HugePageStats {
  size_t regions = 0;       // chunks and own mappings alive
  size_t mapped_bytes = 0;  // their address space
  size_t live_buffers = 0;  // buffers not yet freed
};
HugePageStats huge_page_stats();

}  // namespace nbits
