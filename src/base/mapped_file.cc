#include "base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/error.h"

namespace nbits {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot open ", path, ": ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    fail("cannot stat ", path, ": ", std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, " is not a regular file");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      fail("cannot map ", path, ": ", std::strerror(e));
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  fd_ = fd;  // kept for read(): rows copied without mapping their pages
}

MappedFile::~MappedFile() { reset(); }

bool MappedFile::contains(const void* p, size_t n) const {
  const auto a = reinterpret_cast<uintptr_t>(p), b = reinterpret_cast<uintptr_t>(data_);
  return data_ != nullptr && a >= b && n <= size_ && a - b <= size_ - n;
}

namespace {

// The whole pages inside [p, p + n) (release) or the pages touching it (prefetch).
bool page_range(const void* p, size_t n, bool inner, uintptr_t& lo, uintptr_t& hi) {
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto a = reinterpret_cast<uintptr_t>(p);
  lo = inner ? (a + page - 1) / page * page : a / page * page;
  hi = inner ? (a + n) / page * page : (a + n + page - 1) / page * page;
  return hi > lo;
}

}  // namespace

void MappedFile::release(const void* p, size_t n) const {
  uintptr_t lo = 0, hi = 0;
  if (!contains(p, n) || !page_range(p, n, true, lo, hi)) return;
  ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
}

void release_anonymous_pages(const void* p, size_t n) {
  uintptr_t lo = 0, hi = 0;
  if (p == nullptr || !page_range(p, n, true, lo, hi)) return;
  ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
}

void MappedFile::random_access(const void* p, size_t n) const {
  uintptr_t lo = 0, hi = 0;
  if (!contains(p, n) || !page_range(p, n, false, lo, hi)) return;
  ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_RANDOM);
}

bool MappedFile::read(const void* p, size_t n, void* dst) const {
  if (fd_ < 0 || !contains(p, n)) return false;
  auto off = static_cast<off_t>(static_cast<const uint8_t*>(p) - data_);
  auto* out = static_cast<uint8_t*>(dst);
  while (n > 0) {
    const ssize_t got = ::pread(fd_, out, n, off);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;  // the caller copies the rest through the mapping
    out += got, off += got, n -= static_cast<size_t>(got);
  }
  return true;
}

void MappedFile::prefetch(const void* p, size_t n) const {
  uintptr_t lo = 0, hi = 0;
  if (!contains(p, n) || !page_range(p, n, false, lo, hi)) return;
  ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_WILLNEED);
}

void MappedFile::reset() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
  data_ = nullptr;
  size_ = 0;
  fd_ = -1;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(other.data_), size_(other.size_), fd_(other.fd_), path_(std::move(other.path_)) {
  other.data_ = nullptr;
  other.size_ = 0;
  other.fd_ = -1;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = other.data_;
    size_ = other.size_;
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    other.data_ = nullptr;
    other.size_ = 0;
    other.fd_ = -1;
  }
  return *this;
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open ", path, ": ", std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace nbits
