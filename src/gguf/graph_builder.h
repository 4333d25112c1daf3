// Building an onnx::Model in memory: initializers that view the mapped file or
// own their bytes (Model::owned), nodes with attributes, graph inputs/outputs.
// Used by the GGUF model synthesis; knows nothing of GGUF.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "onnx/model.h"

namespace nbits::gguf {

class GraphBuilder {
 public:
  explicit GraphBuilder(onnx::Model& m) : m_(m) {}

  // An initializer viewing `bytes` (kept alive by the model's mapping or `owned`).
  std::string view(const std::string& name, onnx::DataType dt, std::vector<int64_t> dims,
                   std::span<const uint8_t> bytes);
  // An initializer owning its bytes (moved into Model::owned).
  std::string own(const std::string& name, onnx::DataType dt, std::vector<int64_t> dims,
                  std::vector<uint8_t> bytes);
  std::string own_floats(const std::string& name, std::vector<int64_t> dims, const std::vector<float>& v);
  std::string own_int64(const std::string& name, std::vector<int64_t> dims, std::vector<int64_t> v);
  // An initializer whose bytes `make` gives when it is first read (Model::deferred).
  std::string own_later(const std::string& name, onnx::DataType dt, std::vector<int64_t> dims,
                        std::function<std::vector<uint8_t>()> make);

  // Adds a node; outputs are named "<name>/output_<i>" unless given ("" = not produced).
  onnx::Node& node(const std::string& op, const std::string& domain, const std::string& name,
                   std::vector<std::string> inputs, int n_outputs = 1);
  static void attr(onnx::Node& n, const std::string& key, int64_t v);
  static void attr(onnx::Node& n, const std::string& key, float v);
  static void attr(onnx::Node& n, const std::string& key, std::vector<int64_t> v);
  static void attr(onnx::Node& n, const std::string& key, std::string v);

  // Graph inputs/outputs; dims < 0 are symbolic with the given parameter names.
  void input(const std::string& name, onnx::DataType dt, std::vector<onnx::Dim> dims);
  void output(const std::string& name, onnx::DataType dt, std::vector<onnx::Dim> dims);

 private:
  onnx::Model& m_;
};

inline onnx::Dim sym(const char* param) { return onnx::Dim{-1, param}; }
inline onnx::Dim fixed(int64_t v) { return onnx::Dim{v, ""}; }

}  // namespace nbits::gguf
