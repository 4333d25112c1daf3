#include "base/huge_pages.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#define NBITS_HUGE_PAGES_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NBITS_HUGE_PAGES_ASAN 1
#endif
#endif

#if defined(__linux__) && defined(MADV_HUGEPAGE) && !defined(NBITS_HUGE_PAGES_ASAN)
#define NBITS_HUGE_PAGES_POSSIBLE 1
#endif

namespace nbits {
namespace {

constexpr size_t kAlign = 64;
[[maybe_unused]] constexpr size_t kSmallPage = size_t{4} << 10;
[[maybe_unused]] constexpr size_t kHugePage = size_t{2} << 20;
[[maybe_unused]] constexpr size_t kChunk = size_t{64} << 20;
[[maybe_unused]] constexpr size_t kOwnMapping = size_t{16} << 20;

constexpr uintptr_t round_up(uintptr_t v, uintptr_t a) { return (v + a - 1) / a * a; }
constexpr uintptr_t round_down(uintptr_t v, uintptr_t a) { return v / a * a; }

void* plain_alloc(size_t bytes) { return std::aligned_alloc(kAlign, round_up(bytes, kAlign)); }

bool env_off() {
  const char* e = std::getenv("NBITS_HUGE_PAGES");
  return e != nullptr && (std::strcmp(e, "off") == 0 || std::strcmp(e, "0") == 0);
}

#if defined(NBITS_HUGE_PAGES_POSSIBLE)

struct Region {
  size_t size = 0;  // address space mapped
  size_t used = 0;  // bytes handed out (chunks; = size for an own mapping)
  size_t live = 0;  // buffers not yet freed
  bool chunk = false;
};

struct Arena {
  std::mutex mu;
  std::map<uintptr_t, Region> regions;  // by base address
  uintptr_t current = 0;                // the chunk being carved, 0: none
  size_t live = 0;
};

Arena& arena() {
  static Arena* a = new Arena;  // never destroyed: buffers may be freed by static destructors
  return *a;
}

// `size` bytes (a multiple of 4 KiB) of fresh address space starting on a 2 MiB boundary, 0 if none.
uintptr_t map_aligned(size_t size) {
  const size_t span = size + kHugePage;
  void* p = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 0;
  const uintptr_t b = reinterpret_cast<uintptr_t>(p), a = round_up(b, kHugePage);
  if (a > b) ::munmap(p, a - b);
  const uintptr_t end = b + span, want = a + size;
  if (end > want) ::munmap(reinterpret_cast<void*>(want), end - want);
  return a;
}

void advise_huge(uintptr_t a, size_t bytes) {
  const size_t whole = round_down(bytes, kHugePage);
  if (whole > 0) ::madvise(reinterpret_cast<void*>(a), whole, MADV_HUGEPAGE);  // a hint: failure is harmless
}

void* arena_alloc(Arena& ar, size_t bytes) {
  const std::lock_guard<std::mutex> lock(ar.mu);
  if (bytes >= kOwnMapping) {
    const size_t size = round_up(bytes, kSmallPage);
    const uintptr_t a = map_aligned(size);
    if (a == 0) return nullptr;
    advise_huge(a, bytes);
    ar.regions[a] = Region{size, size, 1, false};
    ++ar.live;
    return reinterpret_cast<void*>(a);
  }
  const size_t need = round_up(bytes, kAlign);
  Region* cur = ar.current != 0 ? &ar.regions.at(ar.current) : nullptr;
  if (cur == nullptr || cur->used + need > cur->size) {
    const uintptr_t a = map_aligned(kChunk);
    if (a == 0) return nullptr;
    advise_huge(a, kChunk);
    if (cur != nullptr && cur->live == 0) {  // the old chunk, empty: give it back
      ::munmap(reinterpret_cast<void*>(ar.current), cur->size);
      ar.regions.erase(ar.current);
    }
    cur = &(ar.regions[a] = Region{kChunk, 0, 0, true});
    ar.current = a;
  }
  void* p = reinterpret_cast<void*>(ar.current + cur->used);
  cur->used += need;
  ++cur->live;
  ++ar.live;
  return p;
}

// false: p is not in the arena (it came from plain_alloc).
bool arena_free(Arena& ar, void* p, size_t bytes) {
  const uintptr_t v = reinterpret_cast<uintptr_t>(p);
  const std::lock_guard<std::mutex> lock(ar.mu);
  auto it = ar.regions.upper_bound(v);
  if (it == ar.regions.begin()) return false;
  it = std::prev(it);
  Region& r = it->second;
  if (v >= it->first + r.size) return false;
  --ar.live;
  if (--r.live == 0) {
    if (!r.chunk || it->first != ar.current) {
      ::munmap(reinterpret_cast<void*>(it->first), r.size);
      ar.regions.erase(it);
    } else {  // the chunk being carved, now empty: carved again from its start
      ::madvise(reinterpret_cast<void*>(it->first), round_up(r.used, kSmallPage), MADV_DONTNEED);
      r.used = 0;
    }
    return true;
  }
  // The buffer's whole pages, back to the OS now (the rest of the chunk stays in use).
  const uintptr_t lo = round_up(v, kSmallPage), hi = round_down(v + bytes, kSmallPage);
  if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
  return true;
}

#endif  // NBITS_HUGE_PAGES_POSSIBLE

}  // namespace

bool huge_pages_enabled() {
#if defined(NBITS_HUGE_PAGES_POSSIBLE)
  static const bool on = !env_off();
  return on;
#else
  (void)env_off;
  return false;
#endif
}

void* huge_page_alloc(size_t bytes) {
  if (bytes == 0) bytes = 1;
#if defined(NBITS_HUGE_PAGES_POSSIBLE)
  if (huge_pages_enabled()) return arena_alloc(arena(), bytes);
#endif
  return plain_alloc(bytes);
}

void huge_page_free(void* p, size_t bytes) noexcept {
  if (p == nullptr) return;
  if (bytes == 0) bytes = 1;
#if defined(NBITS_HUGE_PAGES_POSSIBLE)
  if (huge_pages_enabled() && arena_free(arena(), p, bytes)) return;
#else
  (void)bytes;
#endif
  std::free(p);
}

HugePageStats huge_page_stats() {
  HugePageStats s;
#if defined(NBITS_HUGE_PAGES_POSSIBLE)
  Arena& ar = arena();
  const std::lock_guard<std::mutex> lock(ar.mu);
  s.regions = ar.regions.size();
  for (const auto& [base, r] : ar.regions) s.mapped_bytes += r.size;
  s.live_buffers = ar.live;
#endif
  return s;
}

}  // namespace nbits
