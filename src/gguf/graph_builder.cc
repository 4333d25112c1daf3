#include "gguf/graph_builder.h"

#include <cstring>

namespace nbits::gguf {

std::string GraphBuilder::view(const std::string& name, onnx::DataType dt, std::vector<int64_t> dims,
                               std::span<const uint8_t> bytes) {
  onnx::Tensor t;
  t.name = name;
  t.dtype = dt;
  t.dims = std::move(dims);
  t.bytes = bytes;
  m_.graph.initializers.push_back(std::move(t));
  return m_.graph.initializers.back().name;
}

std::string GraphBuilder::own(const std::string& name, onnx::DataType dt, std::vector<int64_t> dims,
                              std::vector<uint8_t> bytes) {
  m_.owned.push_back(std::move(bytes));  // a deque: earlier buffers never move
  return view(name, dt, std::move(dims), m_.owned.back());
}

std::string GraphBuilder::own_later(const std::string& name, onnx::DataType dt, std::vector<int64_t> dims,
                                    std::function<std::vector<uint8_t>()> make) {
  m_.deferred[name] = std::move(make);
  return view(name, dt, std::move(dims), {});
}

std::string GraphBuilder::own_floats(const std::string& name, std::vector<int64_t> dims,
                                     const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(float));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return own(name, onnx::DataType::kFloat, std::move(dims), std::move(b));
}

std::string GraphBuilder::own_int64(const std::string& name, std::vector<int64_t> dims,
                                    std::vector<int64_t> v) {
  std::vector<uint8_t> b(v.size() * sizeof(int64_t));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return own(name, onnx::DataType::kInt64, std::move(dims), std::move(b));
}

onnx::Node& GraphBuilder::node(const std::string& op, const std::string& domain, const std::string& name,
                               std::vector<std::string> inputs, int n_outputs) {
  onnx::Node n;
  n.op_type = op;
  n.domain = domain;
  n.name = name;
  n.inputs = std::move(inputs);
  for (int i = 0; i < n_outputs; ++i) n.outputs.push_back(name + "/output_" + std::to_string(i));
  m_.graph.nodes.push_back(std::move(n));
  return m_.graph.nodes.back();
}

void GraphBuilder::attr(onnx::Node& n, const std::string& key, int64_t v) {
  onnx::Attribute a;
  a.name = key;
  a.type = onnx::AttrType::kInt;
  a.i = v;
  n.attributes.push_back(std::move(a));
}

void GraphBuilder::attr(onnx::Node& n, const std::string& key, float v) {
  onnx::Attribute a;
  a.name = key;
  a.type = onnx::AttrType::kFloat;
  a.f = v;
  n.attributes.push_back(std::move(a));
}

void GraphBuilder::attr(onnx::Node& n, const std::string& key, std::vector<int64_t> v) {
  onnx::Attribute a;
  a.name = key;
  a.type = onnx::AttrType::kInts;
  a.ints = std::move(v);
  n.attributes.push_back(std::move(a));
}

void GraphBuilder::attr(onnx::Node& n, const std::string& key, std::string v) {
  onnx::Attribute a;
  a.name = key;
  a.type = onnx::AttrType::kString;
  a.s = std::move(v);
  n.attributes.push_back(std::move(a));
}

namespace {
onnx::ValueInfo value_info(const std::string& name, onnx::DataType dt, std::vector<onnx::Dim> dims) {
  onnx::ValueInfo v;
  v.name = name;
  v.elem_type = dt;
  v.dims = std::move(dims);
  v.has_shape = true;
  return v;
}
}  // namespace

void GraphBuilder::input(const std::string& name, onnx::DataType dt, std::vector<onnx::Dim> dims) {
  m_.graph.inputs.push_back(value_info(name, dt, std::move(dims)));
}

void GraphBuilder::output(const std::string& name, onnx::DataType dt, std::vector<onnx::Dim> dims) {
  m_.graph.outputs.push_back(value_info(name, dt, std::move(dims)));
}

}  // namespace nbits::gguf
