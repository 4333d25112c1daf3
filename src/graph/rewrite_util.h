// Small helpers shared by the load-time graph rewrites (plan.cc, fuse_attention.cc).
#pragma once

#include <cstdint>
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

}  // namespace nbits::graph
