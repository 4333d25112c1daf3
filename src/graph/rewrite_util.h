// Small helpers shared by the load-time graph rewrites (plan.cc, fuse_attention.cc).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "onnx/model.h"

namespace nbits::graph {

// An ai.onnx node of this type.
inline bool is_onnx_op(const onnx::Node& n, const char* type) {
  return n.op_type == type && (n.domain.empty() || n.domain == "ai.onnx");
}

// Drops the nodes marked in `removed` (a rewrite fused them into a neighbour).
inline void erase_removed(std::vector<onnx::Node>& nodes, const std::vector<bool>& removed) {
  std::vector<onnx::Node> kept;
  kept.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    if (!removed[i]) kept.push_back(std::move(nodes[i]));
  nodes = std::move(kept);
}

inline onnx::Attribute int_attribute(std::string name, int64_t v) {
  onnx::Attribute a;
  a.name = std::move(name);
  a.type = onnx::AttrType::kInt;
  a.i = v;
  return a;
}

inline onnx::Attribute float_attribute(std::string name, float v) {
  onnx::Attribute a;
  a.name = std::move(name);
  a.type = onnx::AttrType::kFloat;
  a.f = v;
  return a;
}

// An initializer owned by the model (a copy of `bytes` bytes at data); an existing name is kept.
inline std::string add_initializer(onnx::Model& model, const std::string& name, onnx::DataType dt,
                                   std::vector<int64_t> dims, const void* data, size_t bytes) {
  for (const onnx::Tensor& t : model.graph.initializers)
    if (t.name == name) return name;
  std::vector<uint8_t>& owned = model.owned.emplace_back(bytes);
  if (bytes > 0) std::memcpy(owned.data(), data, bytes);
  onnx::Tensor t;
  t.name = name;
  t.dtype = dt;
  t.dims = std::move(dims);
  t.bytes = std::span<const uint8_t>(owned.data(), owned.size());
  model.graph.initializers.push_back(std::move(t));
  return name;
}

}  // namespace nbits::graph
