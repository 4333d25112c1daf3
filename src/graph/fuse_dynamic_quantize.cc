// fuse_dynamic_quantize_matmul (graph/fuse_dynamic_quantize.h).
#include "graph/fuse_dynamic_quantize.h"

#include <cstring>
#include <map>
#include <optional>
#include <string>

#include "graph/rewrite_util.h"
#include "graph/rewrites.h"

namespace nbits::graph {
namespace {

constexpr int64_t kBlock = 32;

// Values of a scalar or per-column ([N] or [1, N]) constant, widened to N entries.
template <typename T>
std::optional<std::vector<T>> per_column(const onnx::Tensor& t, int64_t N) {
  const int64_t n = t.numel();
  const bool col =
      (t.dims.size() == 1 && t.dims[0] == N) || (t.dims.size() == 2 && t.dims[0] == 1 && t.dims[1] == N);
  if (n != 1 && !col) return std::nullopt;
  std::vector<T> v(static_cast<size_t>(N));
  for (int64_t i = 0; i < N; ++i)
    std::memcpy(&v[static_cast<size_t>(i)], t.bytes.data() + (n == 1 ? 0 : i) * sizeof(T), sizeof(T));
  return v;
}

struct Match {
  size_t mi, cast, scale_mul, out_mul, dql;
  std::string x, w, scale_name, zp_name;
};

}  // namespace

int fuse_dynamic_quantize_matmul(std::vector<onnx::Node>& nodes, onnx::Model& model) {
  const onnx::Graph& g = model.graph;
  std::map<std::string, int> uses;
  for (const onnx::Node& n : nodes)
    for (const std::string& in : n.inputs) ++uses[in];
  for (const auto& o : g.outputs) uses[o.name] += 2;
  std::map<std::string, size_t> producer;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const std::string& o : nodes[i].outputs) producer[o] = i;
  std::map<std::string, size_t> reader;  // the reader of a value read once
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const std::string& in : nodes[i].inputs) reader[in] = i;
  auto produced_by = [&](const std::string& v) -> const onnx::Node* {
    auto it = producer.find(v);
    return it == producer.end() ? nullptr : &nodes[it->second];
  };
  auto single_reader = [&](const std::string& v) -> std::optional<size_t> {
    if (uses[v] != 1) return std::nullopt;
    return reader.at(v);
  };

  std::vector<Match> matches;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const onnx::Node& mi = nodes[i];
    if (!is_onnx_op(mi, "MatMulInteger") || mi.inputs.size() < 3 || mi.outputs.size() != 1) continue;
    const onnx::Node* dql = produced_by(mi.inputs[0]);
    if (dql == nullptr || !is_onnx_op(*dql, "DynamicQuantizeLinear") || dql->outputs.size() < 3 ||
        dql->outputs[0] != mi.inputs[0] || dql->outputs[2] != mi.inputs[2])
      continue;
    const onnx::Tensor* w = g.initializer(mi.inputs[1]);
    if (w == nullptr || w->dims.size() != 2 ||
        (w->dtype != onnx::DataType::kInt8 && w->dtype != onnx::DataType::kUint8))
      continue;
    const int64_t K = w->dims[0], N = w->dims[1];
    const onnx::Tensor* wzp = mi.has_input(3) ? g.initializer(mi.inputs[3]) : nullptr;
    if (mi.has_input(3) && (wzp == nullptr || wzp->dtype != w->dtype)) continue;
    const auto cast_i = single_reader(mi.outputs[0]);
    if (!cast_i) continue;
    const onnx::Node& cast = nodes[*cast_i];
    if (!is_onnx_op(cast, "Cast") || cast.attr_int("to", 0) != static_cast<int64_t>(onnx::DataType::kFloat))
      continue;
    const auto out_i = single_reader(cast.outputs[0]);
    if (!out_i) continue;
    const onnx::Node& out = nodes[*out_i];
    if (!is_onnx_op(out, "Mul") || out.inputs.size() != 2) continue;
    const std::string& sc = out.inputs[0] == cast.outputs[0] ? out.inputs[1] : out.inputs[0];
    const onnx::Node* smul = produced_by(sc);
    if (smul == nullptr || !is_onnx_op(*smul, "Mul") || smul->inputs.size() != 2 || uses[sc] != 1) continue;
    const std::string& a_scale = dql->outputs[1];
    const bool first = smul->inputs[0] == a_scale;
    if (!first && smul->inputs[1] != a_scale) continue;
    const onnx::Tensor* ws = g.initializer(smul->inputs[first ? 1 : 0]);
    if (ws == nullptr || ws->dtype != onnx::DataType::kFloat) continue;
    const auto scales = per_column<float>(*ws, N);
    if (!scales) continue;
    std::vector<uint8_t> zp_col(static_cast<size_t>(N), 0);  // raw bytes of the W dtype
    if (wzp != nullptr) {
      const auto z = per_column<uint8_t>(*wzp, N);
      if (!z) continue;
      zp_col = *z;
    }
    // Scale and zero point repeated per block of 32 along K: [k_blocks, N] (DequantizeLinear's
    // block layout, which MatMulDequantized packs).
    const int64_t kb = (K + kBlock - 1) / kBlock;
    std::vector<float> s(static_cast<size_t>(kb * N));
    std::vector<uint8_t> z(static_cast<size_t>(kb * N));
    for (int64_t b = 0; b < kb; ++b)
      for (int64_t n = 0; n < N; ++n) {
        s[static_cast<size_t>(b * N + n)] = (*scales)[static_cast<size_t>(n)];
        z[static_cast<size_t>(b * N + n)] = zp_col[static_cast<size_t>(n)];
      }
    Match m{i,  *cast_i, producer.at(sc), *out_i, producer.at(mi.inputs[0]), dql->inputs[0], mi.inputs[1],
            "", ""};
    const onnx::DataType wdt = w->dtype;  // (w may dangle once initializers grow)
    const std::string base = mi.inputs[1] + "/nbits_block" + std::to_string(kBlock);
    m.scale_name = add_initializer(model, base + "_scale_" + smul->inputs[first ? 1 : 0],
                                   onnx::DataType::kFloat, {kb, N}, s.data(), s.size() * sizeof(float));
    m.zp_name = add_initializer(model, base + "_zero_point" + (mi.has_input(3) ? "_" + mi.inputs[3] : ""),
                                wdt, {kb, N}, z.data(), z.size());
    matches.push_back(std::move(m));
  }
  if (matches.empty()) return 0;
  std::vector<bool> removed(nodes.size(), false);
  for (const Match& m : matches) {
    onnx::Node& out = nodes[m.out_mul];
    onnx::Node fused;
    fused.name = nodes[m.mi].name.empty() ? out.name : nodes[m.mi].name;
    fused.op_type = kMatMulDequantizedOp;
    fused.domain = kInternalDomain;
    fused.inputs = {m.x, m.w, m.scale_name, m.zp_name};
    fused.outputs = out.outputs;
    fused.attributes = {int_attribute("block_size", kBlock)};
    out = std::move(fused);
    removed[m.mi] = removed[m.cast] = removed[m.scale_mul] = true;
  }
  // DynamicQuantizeLinear nodes whose outputs nobody reads any more.
  std::map<std::string, int> live;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (!removed[i])
      for (const std::string& in : nodes[i].inputs) ++live[in];
  for (const auto& o : g.outputs) ++live[o.name];
  for (const Match& m : matches) {
    bool read = false;
    for (const std::string& o : nodes[m.dql].outputs) read = read || (!o.empty() && live.count(o) > 0);
    if (!read) removed[m.dql] = true;
  }
  erase_removed(nodes, removed);
  return static_cast<int>(matches.size());
}

}  // namespace nbits::graph
