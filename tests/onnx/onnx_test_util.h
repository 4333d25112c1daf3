// Helpers shared by the onnx room's tests: temp dirs, file I/O, model comparison.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "onnx/model.h"

namespace nbits::testing {

// A fresh directory under $TMPDIR, removed with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "nbits_onnx_XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline bool same_bytes(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

inline void expect_same_tensor(const onnx::Tensor& a, const onnx::Tensor& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.dtype, b.dtype) << a.name;
  EXPECT_EQ(a.dims, b.dims) << a.name;
  EXPECT_TRUE(same_bytes(a.bytes, b.bytes)) << a.name;
}

inline void expect_same_value_infos(const std::vector<onnx::ValueInfo>& a,
                                    const std::vector<onnx::ValueInfo>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].elem_type, b[i].elem_type) << a[i].name;
    ASSERT_EQ(a[i].dims.size(), b[i].dims.size()) << a[i].name;
    for (size_t d = 0; d < a[i].dims.size(); ++d) {
      EXPECT_EQ(a[i].dims[d].value, b[i].dims[d].value) << a[i].name;
      EXPECT_EQ(a[i].dims[d].param, b[i].dims[d].param) << a[i].name;
    }
  }
}

// Attributes compared by name (order kept), skipping `ignore_attr` if given.
inline void expect_same_nodes(const onnx::Graph& a, const onnx::Graph& b,
                              const std::string& ignore_attr = "") {
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const auto& x = a.nodes[i];
    const auto& y = b.nodes[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.op_type, y.op_type);
    EXPECT_EQ(x.domain, y.domain);
    EXPECT_EQ(x.inputs, y.inputs);
    EXPECT_EQ(x.outputs, y.outputs);
    std::vector<const onnx::Attribute*> xa, ya;
    for (const auto& at : x.attributes)
      if (at.name != ignore_attr) xa.push_back(&at);
    for (const auto& at : y.attributes)
      if (at.name != ignore_attr) ya.push_back(&at);
    ASSERT_EQ(xa.size(), ya.size()) << "node " << i << " " << x.op_type;
    for (size_t k = 0; k < xa.size(); ++k) {
      EXPECT_EQ(xa[k]->name, ya[k]->name);
      EXPECT_EQ(xa[k]->type, ya[k]->type) << xa[k]->name;
      EXPECT_EQ(xa[k]->i, ya[k]->i) << xa[k]->name;
      EXPECT_EQ(xa[k]->f, ya[k]->f) << xa[k]->name;
      EXPECT_EQ(xa[k]->s, ya[k]->s) << xa[k]->name;
      EXPECT_EQ(xa[k]->ints, ya[k]->ints) << xa[k]->name;
      EXPECT_EQ(xa[k]->floats, ya[k]->floats) << xa[k]->name;
      EXPECT_EQ(xa[k]->strings, ya[k]->strings) << xa[k]->name;
      ASSERT_EQ(xa[k]->t.has_value(), ya[k]->t.has_value()) << xa[k]->name;
      if (xa[k]->t) expect_same_tensor(*xa[k]->t, *ya[k]->t);
    }
  }
}

// Same graph: nodes, initializers (names, types, shapes, bytes), inputs, outputs, opsets.
inline void expect_same_model(const onnx::Model& a, const onnx::Model& b,
                              const std::string& ignore_attr = "") {
  EXPECT_EQ(a.ir_version, b.ir_version);
  ASSERT_EQ(a.opset_imports.size(), b.opset_imports.size());
  for (size_t i = 0; i < a.opset_imports.size(); ++i) {
    EXPECT_EQ(a.opset_imports[i].domain, b.opset_imports[i].domain);
    EXPECT_EQ(a.opset_imports[i].version, b.opset_imports[i].version);
  }
  expect_same_nodes(a.graph, b.graph, ignore_attr);
  ASSERT_EQ(a.graph.initializers.size(), b.graph.initializers.size());
  for (size_t i = 0; i < a.graph.initializers.size(); ++i)
    expect_same_tensor(a.graph.initializers[i], b.graph.initializers[i]);
  expect_same_value_infos(a.graph.inputs, b.graph.inputs);
  expect_same_value_infos(a.graph.outputs, b.graph.outputs);
}

}  // namespace nbits::testing
