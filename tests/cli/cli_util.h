// Running the built `nbits` binary from tests: $NBITS_BIN/nbits, or <build>/nbits
// found from this test binary's path (<build>/tests/test_cli). Missing binary:
// fail in CI, skip elsewhere.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/shared_data.h"

namespace nbits::testing {

// $NBITS_BIN/nbits, else the `nbits` next to the tests/ folder holding this test binary.
inline std::string nbits_bin() {
  if (const char* env = std::getenv("NBITS_BIN"); env != nullptr && *env) return std::string(env) + "/nbits";
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  return (self.parent_path().parent_path() / "nbits").string();
}

// Use at the top of a test.
#define NBITS_REQUIRE_BIN()                                                                    \
  do {                                                                                         \
    const std::string bin_ = ::nbits::testing::nbits_bin();                                    \
    if (bin_.empty() || !std::filesystem::exists(bin_)) {                                      \
      if (::nbits::testing::in_ci()) FAIL() << "nbits binary not found (NBITS_BIN): " << bin_; \
      GTEST_SKIP() << "nbits binary not built (set NBITS_BIN to the build dir): " << bin_;     \
    }                                                                                          \
  } while (0)

inline std::string shell_quote(const std::string& s) {
  std::string out(1, '\'');
  for (char c : s) {
    if (c == '\'')
      out.append("'\\''");
    else
      out.push_back(c);
  }
  out.push_back('\'');
  return out;
}

inline std::string slurp_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct RunResult {
  int exit_code = -1;  // -1: killed by a signal
  std::string out, err;
  std::vector<std::string> err_lines() const {
    std::vector<std::string> lines;
    std::istringstream in(err);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
  }
};

// Runs `nbits ARGS...` (each argument quoted); stdin_text is piped in.
inline RunResult run_nbits(const std::vector<std::string>& args, const std::string& stdin_text = "") {
  static int counter = 0;
  const std::string base = std::filesystem::temp_directory_path().string() + "/nbits_cli_" +
                           std::to_string(::getpid()) + "_" + std::to_string(counter++);
  std::string cmd = shell_quote(nbits_bin());
  for (const auto& a : args) {
    cmd.push_back(' ');
    cmd.append(shell_quote(a));
  }
  {
    std::ofstream in(base + ".in", std::ios::binary);
    in << stdin_text;
  }
  for (const auto& [op, file] :
       {std::pair<const char*, const char*>{" < ", ".in"}, {" > ", ".out"}, {" 2> ", ".err"}}) {
    cmd.append(op);
    cmd.append(shell_quote(base + file));
  }
  const int status = std::system(cmd.c_str());
  RunResult r;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  r.out = slurp_text(base + ".out");
  r.err = slurp_text(base + ".err");
  for (const char* ext : {".in", ".out", ".err"}) std::filesystem::remove(base + ext);
  return r;
}

// Runs `nbits ARGS...` that must succeed and print exactly one JSON object on stdout (an empty
// object, after a failed expectation, when it did not).
inline nlohmann::json run_json(const std::vector<std::string>& args) {
  RunResult r = run_nbits(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (r.exit_code != 0) return nlohmann::json::object();
  return nlohmann::json::parse(r.out);
}

// The "ids" of `nbits run --format json`.
inline std::vector<int32_t> ids_of(const nlohmann::json& j) { return j.value("ids", std::vector<int32_t>{}); }

}  // namespace nbits::testing
