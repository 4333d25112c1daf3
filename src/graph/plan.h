// Load-time graph preparation: structural validation, topological order and
// the graph rewrites the session applies before resolving ops.
#pragma once

#include <vector>

#include "onnx/model.h"

namespace nbits::graph {

// Checks every node input / graph output is produced exactly once (by a node,
// an initializer or a graph input) and returns the nodes in topological order.
// Nameless nodes get a descriptive name. Throws nbits::Error naming the node.
std::vector<onnx::Node> sorted_nodes(const onnx::Graph& g);

// ORT's MatMulNBits bias fusion: a MatMulNBits whose only consumer is an Add of
// a 1-D constant float [N] takes that constant as its bias input (index 5); the
// Add disappears. Returns the number of fusions.
int fuse_matmul_nbits_bias(std::vector<onnx::Node>& nodes, const onnx::Graph& g);

}  // namespace nbits::graph
