// Test helper: saves a ModelWriter model to a fresh temp file and loads a Session.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "graph/session.h"
#include "onnx/writer.h"

namespace nbits::testing {

inline std::string temp_model_path() {
  static int counter = 0;
  return "/tmp/nbits_ops_test_" + std::to_string(getpid()) + "_" + std::to_string(counter++) + ".onnx";
}

// Loads the model written by `w` (file removed afterwards).
inline std::unique_ptr<graph::Session> load_written(const onnx::ModelWriter& w,
                                                    const graph::SessionOptions& o = {}) {
  const std::string path = temp_model_path();
  w.save(path);
  struct Remove {
    std::string p;
    ~Remove() { std::remove(p.c_str()); }
  } rm{path};
  return graph::Session::load(path, o);
}

template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Deterministic pseudo-random floats in [-1, 1).
inline std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  for (auto& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<float>(seed >> 8) / static_cast<float>(1 << 23) - 1.0f;
  }
  return v;
}

// A load error is one line holding every part.
inline void expect_error(const std::string& msg, std::initializer_list<const char*> parts) {
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  for (const char* p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
}

}  // namespace nbits::testing
