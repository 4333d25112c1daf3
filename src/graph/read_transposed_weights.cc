// MatMul(A, Transpose(C)) with C a constant 2-D float initializer (onnx-community exports' tied
// lm_head: Transpose of the embedding, which the q4 quantizer leaves fp32) reads C itself: the
// MatMul gets nbits_b_nk = 1 and packs (or re-quantizes) C as the [N, K] matrix it already is.
// Folding the Transpose at load instead made a transposed copy as large as the embedding
// (545 MB for Qwen2.5-0.5B), resident while the MatMul packed it.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "graph/op.h"
#include "graph/rewrite_util.h"
#include "graph/rewrites.h"
#include "ops/ops.h"

namespace nbits::graph {

int read_transposed_weights(std::vector<onnx::Node>& nodes, const onnx::Graph& g,
                            const SessionOptions& options) {
  std::map<std::string, std::vector<std::pair<size_t, size_t>>> readers;  // value -> (node, input)
  for (size_t i = 0; i < nodes.size(); ++i)
    for (size_t j = 0; j < nodes[i].inputs.size(); ++j) readers[nodes[i].inputs[j]].emplace_back(i, j);
  for (const onnx::ValueInfo& o : g.outputs)
    readers[o.name].emplace_back(nodes.size(), 0);  // never rewritten
  std::vector<bool> removed(nodes.size(), false);
  int rewritten = 0;
  for (size_t t = 0; t < nodes.size(); ++t) {
    const onnx::Node& tr = nodes[t];
    const std::vector<int64_t> perm = tr.attr_ints("perm");
    if (!is_onnx_op(tr, "Transpose") || tr.inputs.size() != 1 || tr.outputs.size() != 1 ||
        !(perm.empty() || perm == std::vector<int64_t>{1, 0}))
      continue;
    const onnx::Tensor* c = g.initializer(tr.inputs[0]);
    if (c == nullptr || c->dims.size() != 2) continue;
    const std::optional<DType> dt = to_dtype(c->dtype);
    if (!dt || !ops::matmul_packs_constant_b(options, *dt)) continue;
    const auto it = readers.find(tr.outputs[0]);
    if (it == readers.end()) continue;
    bool all_matmul_b = true;
    for (const auto& [r, j] : it->second)
      all_matmul_b = all_matmul_b && r < nodes.size() && j == 1 && is_onnx_op(nodes[r], "MatMul");
    if (!all_matmul_b) continue;
    for (const auto& [r, j] : it->second) {
      nodes[r].inputs[1] = tr.inputs[0];
      nodes[r].attributes.push_back(int_attribute("nbits_b_nk", 1));
      ++rewritten;
    }
    removed[t] = true;
  }
  erase_removed(nodes, removed);
  return rewritten;
}

}  // namespace nbits::graph
