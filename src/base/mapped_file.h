// Read-only memory-mapped file (RAII). Empty files map to an empty span.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace nbits {

class MappedFile {
 public:
  MappedFile() = default;
  // Throws nbits::Error naming the path if it cannot be opened or mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // True when [p, p + n) lies inside this mapping.
  bool contains(const void* p, size_t n) const;
  // Drops the whole pages inside [p, p + n) from this process's memory
  // (MADV_DONTNEED): a later read faults them back in from the file, so this is
  // only a memory hint, never a change of contents. Ignored outside the mapping.
  void release(const void* p, size_t n) const;
  // Asks the kernel to read [p, p + n) ahead (MADV_WILLNEED), so first touches
  // do not wait on the disk. Ignored outside the mapping.
  void prefetch(const void* p, size_t n) const;
  // Rows of [p, p + n) are read at random (an embedding table): a fault maps just
  // its page instead of the 64 KiB around it (MADV_RANDOM). Ignored outside.
  void random_access(const void* p, size_t n) const;
  // Copies [p, p + n) of this mapping into dst with pread, without mapping its pages
  // into this process: rows of a large table read at run time (an embedding) would
  // otherwise each map the whole page-cache folio around them (Linux 6.x keeps file
  // pages read sequentially before in folios of up to 2 MiB, mapped whole on a fault),
  // so the process's RSS would grow by megabytes per row. False (dst partly written)
  // when [p, p + n) is outside the mapping or the read fails: copy from the mapping then.
  bool read(const void* p, size_t n, void* dst) const;

 private:
  void reset();
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  int fd_ = -1;
  std::string path_;
};

// Drops the whole pages inside [p, p + n) of this process's own private memory (a heap
// buffer): they read as zeros afterwards, so only for bytes never read again (a temporary
// already consumed). Peak-memory hint at load; never for a file mapping's pages (see release).
void release_anonymous_pages(const void* p, size_t n);

// Reads a whole (small) file into a string; throws nbits::Error on failure.
std::string read_text_file(const std::string& path);
bool file_exists(const std::string& path);

}  // namespace nbits
