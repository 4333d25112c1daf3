// MappedFile: bounds of contains(), release()/prefetch() are hints that never
// change what the mapping reads, and read() copies bytes without mapping them.
#include "base/mapped_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"

namespace nbits {
namespace {

struct TempFile {
  std::string path = "/tmp/nbits_mapped_file_test_" + std::to_string(getpid());
  explicit TempFile(const std::vector<uint8_t>& bytes) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    EXPECT_NE(f, nullptr);
    EXPECT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
    std::fclose(f);
  }
  ~TempFile() { std::remove(path.c_str()); }
};

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(i * 131 + (i >> 12));
  return b;
}

TEST(MappedFile, ContainsChecksBothEnds) {
  const auto bytes = pattern(10000);
  TempFile t(bytes);
  MappedFile m(t.path);
  ASSERT_EQ(m.size(), bytes.size());
  EXPECT_TRUE(m.contains(m.data(), m.size()));
  EXPECT_TRUE(m.contains(m.data() + 9999, 1));
  EXPECT_TRUE(m.contains(m.data() + 10000, 0));
  EXPECT_FALSE(m.contains(m.data() + 9999, 2));
  EXPECT_FALSE(m.contains(m.data() - 1, 1));
  EXPECT_FALSE(m.contains(bytes.data(), 1));  // another buffer
  EXPECT_FALSE(m.contains(m.data(), SIZE_MAX));
}

TEST(MappedFile, ReleaseAndPrefetchKeepTheContents) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const auto bytes = pattern(page * 9 + 123);
  TempFile t(bytes);
  MappedFile m(t.path);
  // Touch everything, then drop an unaligned middle range and the whole file.
  uint64_t sum = 0;
  for (size_t i = 0; i < m.size(); ++i) sum += m.data()[i];
  m.release(m.data() + 100, page * 5);
  m.release(m.data(), m.size());
  m.prefetch(m.data() + 7, page * 3);
  m.release(bytes.data(), bytes.size());  // outside the mapping: ignored, must not touch `bytes`
  m.prefetch(bytes.data(), bytes.size());
  uint64_t again = 0;
  for (size_t i = 0; i < m.size(); ++i) {
    ASSERT_EQ(m.data()[i], bytes[i]) << "byte " << i;
    again += m.data()[i];
  }
  EXPECT_EQ(sum, again);
  EXPECT_EQ(bytes, pattern(page * 9 + 123));
}

// Resident KiB of this process's mappings of `path` (/proc/self/smaps), or -1 when unreadable.
long resident_kib_of(const std::string& path) {
  std::ifstream smaps("/proc/self/smaps");
  if (!smaps) return -1;
  long kib = 0;
  bool ours = false;
  for (std::string line; std::getline(smaps, line);) {
    std::istringstream fields(line);
    std::string first;
    fields >> first;
    if (!first.empty() &&
        first.back() != ':')  // a mapping's header line: "lo-hi perms offset dev inode path"
      ours = line.size() >= path.size() && line.compare(line.size() - path.size(), path.size(), path) == 0;
    else if (ours && first == "Rss:")
      kib += std::stol(line.substr(4));
  }
  return kib;
}

TEST(MappedFile, ReadCopiesWithoutMappingThePages) {
  const auto bytes = pattern(8 << 20);
  TempFile t(bytes);
  {  // a sequential read first, as a checksum tool would: the page cache may then hold large folios
    std::ifstream f(t.path, std::ios::binary);
    std::ostringstream sink;
    sink << f.rdbuf();
  }
  MappedFile m(t.path);
  std::vector<uint8_t> row(3584);
  for (size_t i = 0; i < 200; ++i) {
    const size_t off = (1 + i * 7919) % 2300 * row.size();
    ASSERT_TRUE(m.read(m.data() + off, row.size(), row.data()));
    ASSERT_EQ(std::memcmp(row.data(), bytes.data() + off, row.size()), 0) << off;
  }
  ASSERT_TRUE(m.read(m.data() + m.size() - 5, 5, row.data()));  // the last bytes
  EXPECT_EQ(std::memcmp(row.data(), bytes.data() + bytes.size() - 5, 5), 0);
  EXPECT_FALSE(m.read(m.data() + m.size() - 4, 5, row.data()));  // past the end
  EXPECT_FALSE(m.read(row.data(), 4, row.data() + 8));           // not in the mapping
  const long kib = resident_kib_of(t.path);
  ASSERT_GE(kib, 0) << "no /proc/self/smaps";
  EXPECT_EQ(kib, 0) << "read() mapped pages of the file into the process";
  volatile uint8_t touched = m.data()[5 << 20];  // a read through the mapping does show in smaps
  EXPECT_EQ(touched, bytes[5 << 20]);
  EXPECT_GT(resident_kib_of(t.path), 0);
  MappedFile moved(std::move(m));  // the descriptor moves with the mapping
  ASSERT_TRUE(moved.read(moved.data() + 4096, 16, row.data()));
  EXPECT_EQ(std::memcmp(row.data(), bytes.data() + 4096, 16), 0);
}

TEST(MappedFile, MissingFileIsAClearError) {
  try {
    MappedFile m("/nonexistent/nbits/model.onnx");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/nbits/model.onnx"), std::string::npos);
  }
}

}  // namespace
}  // namespace nbits
