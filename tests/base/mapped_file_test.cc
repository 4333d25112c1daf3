// MappedFile: bounds of contains(), and release()/prefetch() are hints that
// never change what the mapping reads.
#include "base/mapped_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
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
