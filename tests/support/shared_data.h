// Locating ../shared test data. In CI (CI=true) a missing file fails the test;
// elsewhere the test is skipped with a message naming the missing path.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "base/mapped_file.h"
#include "support/source_dir.h"

namespace nbits::testing {

inline std::string shared_dir() {
  if (const char* env = std::getenv("NBITS_SHARED"); env != nullptr && *env) return env;
  return std::string(nbits::testing::source_dir()) + "/../shared";
}

inline std::string shared_path(const std::string& rel) { return shared_dir() + "/" + rel; }

inline bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

}  // namespace nbits::testing

// Use at the top of a test: NBITS_REQUIRE_SHARED(path) -> fail in CI, skip elsewhere.
#define NBITS_REQUIRE_SHARED(path)                                                     \
  do {                                                                                 \
    if (!::nbits::file_exists(path)) {                                                 \
      if (::nbits::testing::in_ci()) FAIL() << "missing shared test data: " << (path); \
      GTEST_SKIP() << "missing shared test data: " << (path);                          \
    }                                                                                  \
  } while (0)
