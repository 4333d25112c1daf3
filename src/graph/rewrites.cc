#include "graph/rewrites.h"

#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "base/error.h"
#include "graph/rewrite_util.h"

namespace nbits::graph {

std::vector<onnx::Node> sorted_nodes(const onnx::Graph& g) {
  std::vector<onnx::Node> nodes = g.nodes;
  for (onnx::Node& n : nodes)
    if (n.name.empty())
      n.name = n.outputs.empty() ? "<" + n.op_type + ">" : "<" + n.op_type + " -> " + n.outputs[0] + ">";

  std::set<std::string> sources;  // graph inputs and initializers
  for (const auto& in : g.inputs) sources.insert(in.name);
  for (const auto& t : g.initializers) sources.insert(t.name);
  std::map<std::string, size_t> producer;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const std::string& o : nodes[i].outputs) {
      if (o.empty()) continue;
      NBITS_CHECK(!sources.count(o), "node '", nodes[i].name, "' (", nodes[i].op_type, ") output '", o,
                  "' is also a graph input or initializer");
      const auto [it, fresh] = producer.emplace(o, i);
      NBITS_CHECK(fresh, "value '", o, "' is produced by two nodes: '", nodes[it->second].name, "' and '",
                  nodes[i].name, "'");
    }
  for (const onnx::Node& n : nodes)
    for (const std::string& in : n.inputs)
      NBITS_CHECK(in.empty() || sources.count(in) || producer.count(in), "node '", n.name, "' (", n.op_type,
                  ") input '", in, "' is not produced by any node, initializer or graph input");
  for (const auto& out : g.outputs)
    NBITS_CHECK(producer.count(out.name) || sources.count(out.name), "graph output '", out.name,
                "' is not produced by any node, initializer or graph input");

  // Kahn's algorithm, keeping the file's order among ready nodes.
  std::vector<int> pending(nodes.size(), 0);
  std::vector<std::vector<size_t>> users(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const std::string& in : nodes[i].inputs) {
      auto it = in.empty() ? producer.end() : producer.find(in);
      if (it == producer.end()) continue;
      ++pending[i];
      users[it->second].push_back(i);
    }
  std::vector<size_t> order;
  std::set<size_t> ready;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (pending[i] == 0) ready.insert(i);
  while (!ready.empty()) {
    const size_t i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(i);
    for (size_t u : users[i])
      if (--pending[u] == 0) ready.insert(u);
  }
  if (order.size() != nodes.size()) {
    for (size_t i = 0; i < nodes.size(); ++i)
      if (pending[i] > 0)
        fail("graph has a cycle: node '", nodes[i].name, "' (", nodes[i].op_type,
             ") depends on its own output");
  }
  std::vector<onnx::Node> sorted;
  sorted.reserve(nodes.size());
  for (size_t i : order) sorted.push_back(std::move(nodes[i]));
  return sorted;
}

int fuse_matmul_nbits_bias(std::vector<onnx::Node>& nodes, const onnx::Graph& g) {
  std::map<std::string, int> uses;
  for (const onnx::Node& n : nodes)
    for (const std::string& in : n.inputs) ++uses[in];
  std::set<std::string> graph_outputs;
  for (const auto& o : g.outputs) graph_outputs.insert(o.name);
  std::map<std::string, size_t> consumer;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const std::string& in : nodes[i].inputs) consumer[in] = i;

  int fused = 0;
  std::vector<bool> removed(nodes.size(), false);
  for (size_t i = 0; i < nodes.size(); ++i) {
    onnx::Node& mm = nodes[i];
    if (mm.op_type != "MatMulNBits" || mm.domain != "com.microsoft" || mm.outputs.size() != 1) continue;
    if (mm.has_input(4) || mm.has_input(5)) continue;
    const std::string& y = mm.outputs[0];
    if (uses[y] != 1 || graph_outputs.count(y)) continue;
    const size_t ai = consumer[y];
    const onnx::Node& add = nodes[ai];
    if (add.op_type != "Add" || !(add.domain.empty() || add.domain == "ai.onnx") || add.inputs.size() != 2)
      continue;
    const std::string& other = add.inputs[0] == y ? add.inputs[1] : add.inputs[0];
    const onnx::Tensor* bias = g.initializer(other);
    const onnx::Attribute* n_attr = mm.attr("N");
    if (bias == nullptr || n_attr == nullptr || bias->dtype != onnx::DataType::kFloat ||
        bias->dims.size() != 1 || bias->dims[0] != n_attr->i)
      continue;
    if (mm.inputs.size() < 6) mm.inputs.resize(6);  // keeps an internal input 6 (GGUF mins)
    mm.inputs[5] = other;
    mm.outputs[0] = add.outputs[0];
    removed[ai] = true;
    ++fused;
  }
  erase_removed(nodes, removed);
  return fused;
}

int fuse_silu_mul(std::vector<onnx::Node>& nodes, const onnx::Graph& g) {
  std::map<std::string, int> uses;
  for (const onnx::Node& n : nodes)
    for (const std::string& in : n.inputs) ++uses[in];
  for (const auto& o : g.outputs) uses[o.name] += 2;  // graph outputs are never fused away
  std::map<std::string, size_t> producer, consumer;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const std::string& o : nodes[i].outputs) producer[o] = i;
    for (const std::string& in : nodes[i].inputs) consumer[in] = i;
  }
  auto made_by = [&](const std::string& v) -> const onnx::Node* {
    auto it = producer.find(v);
    return it == producer.end() ? nullptr : &nodes[it->second];
  };
  // Output columns of a weight projection: MatMulNBits' N, or a MatMul / MatMulDequantized with a 2-D
  // constant B; -1 otherwise.
  auto projection_n = [&](const onnx::Node& p) -> int64_t {
    if (p.op_type == "MatMulNBits") {
      const onnx::Attribute* n = p.attr("N");
      return n != nullptr ? n->i : -1;
    }
    const bool dequantized = p.op_type == kMatMulDequantizedOp && p.domain == kInternalDomain;
    if (!(dequantized || is_onnx_op(p, "MatMul")) || p.inputs.size() < 2) return -1;
    const onnx::Tensor* b = g.initializer(p.inputs[1]);
    return b != nullptr && b->dims.size() == 2 ? b->dims[1] : -1;
  };
  // g and u: outputs of weight projections reading the same A with the same N.
  auto twin_projections = [&](const std::string& gv, const std::string& uv) {
    const onnx::Node* pg = made_by(gv);
    const onnx::Node* pu = made_by(uv);
    if (pg == nullptr || pu == nullptr || pg == pu) return false;
    if (pg->inputs.empty() || pu->inputs.empty() || pg->inputs[0] != pu->inputs[0]) return false;
    const int64_t ng = projection_n(*pg), nu = projection_n(*pu);
    return ng > 0 && ng == nu && pg->outputs[0] == gv && pu->outputs[0] == uv;
  };

  int fused = 0;
  std::vector<bool> removed(nodes.size(), false);
  for (size_t si = 0; si < nodes.size(); ++si) {
    const onnx::Node& sig = nodes[si];
    if (!is_onnx_op(sig, "Sigmoid") || sig.inputs.size() != 1 || sig.outputs.size() != 1) continue;
    const std::string& gv = sig.inputs[0];
    const std::string& sv = sig.outputs[0];
    if (uses[sv] != 1) continue;
    const size_t ai = consumer[sv];
    const onnx::Node& act = nodes[ai];  // a = g * s
    if (!is_onnx_op(act, "Mul") || act.inputs.size() != 2 || act.outputs.size() != 1) continue;
    if (!((act.inputs[0] == gv && act.inputs[1] == sv) || (act.inputs[0] == sv && act.inputs[1] == gv)))
      continue;
    const std::string& av = act.outputs[0];
    if (uses[av] != 1) continue;
    const size_t mi = consumer[av];
    onnx::Node& mul = nodes[mi];  // m = a * u
    if (!is_onnx_op(mul, "Mul") || mul.inputs.size() != 2 || mul.outputs.size() != 1) continue;
    const std::string uv = mul.inputs[0] == av ? mul.inputs[1] : mul.inputs[0];
    if (uv == av || !twin_projections(gv, uv)) continue;
    mul.op_type = kSiluMulOp;
    mul.domain = kInternalDomain;
    mul.inputs = {gv, uv};
    mul.attributes.clear();
    removed[si] = removed[ai] = true;
    ++fused;
  }
  erase_removed(nodes, removed);
  return fused;
}

int fuse_matmul_nbits_groups(std::vector<onnx::Node>& nodes, const onnx::Graph& g) {
  std::map<std::string, int> uses;
  for (const onnx::Node& n : nodes)
    for (const std::string& in : n.inputs) ++uses[in];
  for (const auto& o : g.outputs) uses[o.name] += 2;  // graph outputs keep their producers
  std::map<std::string, size_t> producer;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const std::string& o : nodes[i].outputs) producer[o] = i;
  auto constant = [&](const onnx::Node& n, size_t i) {
    return !n.has_input(i) || g.initializer(n.inputs[i]);
  };
  // What members of one group share: A, K, bits, block_size, accuracy_level.
  using Key = std::tuple<std::string, int64_t, int64_t, int64_t, int64_t>;
  std::map<size_t, Key> key;  // groupable MatMulNBits nodes
  for (size_t i = 0; i < nodes.size(); ++i) {
    const onnx::Node& n = nodes[i];
    if (n.op_type != "MatMulNBits" || n.domain != "com.microsoft" || n.outputs.size() != 1) continue;
    // A graph output stays alone (the lm_head: the session may compute only its last positions).
    bool graph_output = false;
    for (const auto& o : g.outputs) graph_output = graph_output || o.name == n.outputs[0];
    if (n.outputs[0].empty() || graph_output || !n.has_input(0) || n.has_input(4) || n.has_input(6)) continue;
    if (n.inputs.size() > 7 || !g.initializer(n.inputs[1]) || !g.initializer(n.inputs[2]) ||
        !constant(n, 3) || !constant(n, 5) || n.attr_int("weight_prepacked", 0) != 0 ||
        n.attr("K") == nullptr || n.attr("N") == nullptr || n.attr("block_size") == nullptr)
      continue;
    key[i] = Key{n.inputs[0], n.attr_int("K", 0), n.attr_int("bits", 4), n.attr_int("block_size", 0),
                 n.attr_int("accuracy_level", 0)};
  }
  // The group node for members (node indices, in order), at the first member's place.
  auto group_node = [&](const std::vector<size_t>& members, const char* op) {
    const onnx::Node& first = nodes[members[0]];
    onnx::Node n;
    n.op_type = op;
    n.domain = kInternalDomain;
    n.inputs = {first.inputs[0]};
    onnx::Attribute widths, names;
    widths.name = "N";
    widths.type = onnx::AttrType::kInts;
    names.name = "names";
    names.type = onnx::AttrType::kStrings;
    std::string joined;
    for (size_t m : members) {
      const onnx::Node& mm = nodes[m];
      for (size_t j : {1, 2, 3, 5}) n.inputs.push_back(mm.has_input(j) ? mm.inputs[j] : std::string());
      widths.ints.push_back(mm.attr_int("N", 0));
      names.strings.push_back(mm.name);
      joined += (joined.empty() ? "" : " + ") + mm.name;
      n.outputs.push_back(mm.outputs[0]);
    }
    n.name = "<" + std::string(op) + ": " + joined + ">";
    for (const char* a : {"K", "bits", "block_size", "accuracy_level"})
      if (const onnx::Attribute* at = first.attr(a)) n.attributes.push_back(*at);
    n.attributes.push_back(std::move(widths));
    n.attributes.push_back(std::move(names));
    return n;
  };

  int replaced = 0;
  std::vector<bool> removed(nodes.size(), false);
  std::map<size_t, onnx::Node> placed;  // index -> the group node put there
  // gate/up read only by a SiluMul: one MatMulNBitsSiluMul writing its output.
  for (size_t si = 0; si < nodes.size(); ++si) {
    const onnx::Node& sm = nodes[si];
    if (sm.op_type != kSiluMulOp || sm.domain != kInternalDomain || sm.inputs.size() != 2 ||
        sm.outputs.size() != 1)
      continue;
    auto pg = producer.find(sm.inputs[0]), pu = producer.find(sm.inputs[1]);
    if (pg == producer.end() || pu == producer.end() || pg->second == pu->second) continue;
    const size_t gi = pg->second, ui = pu->second;
    if (!key.count(gi) || !key.count(ui) || key[gi] != key[ui] || uses[sm.inputs[0]] != 1 ||
        uses[sm.inputs[1]] != 1 || nodes[gi].attr_int("N", 0) != nodes[ui].attr_int("N", 0))
      continue;
    onnx::Node n = group_node({gi, ui}, kMatMulNBitsSiluMulOp);
    n.outputs = sm.outputs;
    const size_t at = std::min(gi, ui);
    removed[gi] = removed[ui] = removed[si] = true;
    key.erase(gi);
    key.erase(ui);
    placed.emplace(at, std::move(n));
    replaced += 3;
  }
  // The rest: same key, two or more members.
  std::map<Key, std::vector<size_t>> groups;
  for (const auto& [i, k] : key) groups[k].push_back(i);
  for (const auto& [k, members] : groups) {
    if (members.size() < 2) continue;
    onnx::Node n = group_node(members, kMatMulNBitsGroupOp);
    for (size_t m : members) removed[m] = true;
    placed.emplace(members[0], std::move(n));
    replaced += static_cast<int>(members.size());
  }
  // Members read only A (produced before the first of them) and initializers, and their
  // readers come after them: each group is in topological order at its first member's place.
  for (auto& [i, n] : placed) {
    nodes[i] = std::move(n);
    removed[i] = false;
  }
  erase_removed(nodes, removed);
  return replaced;
}

int fuse_dequantize_matmul(std::vector<onnx::Node>& nodes, const onnx::Graph& g) {
  std::map<std::string, int> uses;
  for (const onnx::Node& n : nodes)
    for (const std::string& in : n.inputs) ++uses[in];
  for (const auto& o : g.outputs) uses[o.name] += 2;
  std::map<std::string, size_t> producer;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const std::string& o : nodes[i].outputs) producer[o] = i;
  int fused = 0;
  std::vector<bool> removed(nodes.size(), false);
  for (onnx::Node& mm : nodes) {
    if (!is_onnx_op(mm, "MatMul") || mm.inputs.size() != 2 || uses[mm.inputs[1]] != 1) continue;
    auto it = producer.find(mm.inputs[1]);
    if (it == producer.end()) continue;
    const onnx::Node& dq = nodes[it->second];
    if (!is_onnx_op(dq, "DequantizeLinear") || dq.inputs.size() < 2 || dq.attr_int("axis", 1) != 0 ||
        dq.attr_int("block_size", 0) <= 0)
      continue;
    const onnx::Tensor* w = g.initializer(dq.inputs[0]);
    const onnx::Tensor* scale = g.initializer(dq.inputs[1]);
    const bool small_int =
        w != nullptr && (w->dtype == onnx::DataType::kInt4 || w->dtype == onnx::DataType::kUint4 ||
                         w->dtype == onnx::DataType::kInt8 || w->dtype == onnx::DataType::kUint8);
    if (!small_int || w->dims.size() != 2 || scale == nullptr || scale->dtype != onnx::DataType::kFloat)
      continue;
    if (dq.has_input(2) && g.initializer(dq.inputs[2]) == nullptr) continue;
    mm.op_type = kMatMulDequantizedOp;
    mm.domain = kInternalDomain;
    mm.inputs = {mm.inputs[0], dq.inputs[0], dq.inputs[1]};
    if (dq.has_input(2)) mm.inputs.push_back(dq.inputs[2]);
    onnx::Attribute bs;
    bs.name = "block_size";
    bs.type = onnx::AttrType::kInt;
    bs.i = dq.attr_int("block_size", 0);
    mm.attributes = {bs};
    removed[it->second] = true;
    ++fused;
  }
  erase_removed(nodes, removed);
  return fused;
}

namespace {

bool is_half(onnx::DataType t) { return t == onnx::DataType::kFloat16 || t == onnx::DataType::kBfloat16; }

onnx::Node storage_cast(const std::string& from, const std::string& to, onnx::DataType dtype) {
  onnx::Node n;
  n.name = "<" + std::string(kStorageCastOp) + " -> " + to + ">";
  n.op_type = kStorageCastOp;
  n.domain = kInternalDomain;
  n.inputs = {from};
  n.outputs = {to};
  onnx::Attribute a;
  a.name = "to";
  a.type = onnx::AttrType::kInt;
  a.i = static_cast<int64_t>(dtype);
  n.attributes.push_back(std::move(a));
  return n;
}

void rename_inputs(std::vector<onnx::Node>& nodes, const std::string& from, const std::string& to) {
  for (onnx::Node& n : nodes)
    for (std::string& in : n.inputs)
      if (in == from) in = to;
}

}  // namespace

namespace {

// GroupQueryAttention, or nbits' ShortConv (its cache inputs and outputs at the same places).
bool is_cache_op(const onnx::Node& n) {
  return (n.op_type == "GroupQueryAttention" && n.domain == "com.microsoft") ||
         (n.op_type == "ShortConv" && n.domain == "nbits.internal");
}

// An fp16 KV cache value GroupQueryAttention reads (past, inputs 3-4) or writes
// (present, outputs 1-2) as fp16 itself: no StorageCast at that boundary.
bool fp16_cache_input(const std::vector<onnx::Node>& nodes, const onnx::ValueInfo& in) {
  if (in.elem_type != onnx::DataType::kFloat16) return false;
  bool read = false;
  for (const onnx::Node& n : nodes)
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i] == in.name) {
        if (!is_cache_op(n) || (i != 3 && i != 4)) return false;
        read = true;
      }
  return read;
}

bool fp16_cache_output(const std::vector<onnx::Node>& nodes, const onnx::ValueInfo& out) {
  if (out.elem_type != onnx::DataType::kFloat16) return false;
  for (const onnx::Node& n : nodes)
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (n.outputs[i] == out.name) return is_cache_op(n) && (i == 1 || i == 2);
  return false;
}

}  // namespace

int lower_float_boundaries(std::vector<onnx::Node>& nodes, const onnx::Graph& g) {
  static constexpr const char* kSuffix = "/nbits_f32";
  std::vector<onnx::Node> front, back;
  for (const onnx::ValueInfo& in : g.inputs) {
    if (!is_half(in.elem_type) || g.initializer(in.name) != nullptr || fp16_cache_input(nodes, in)) continue;
    const std::string wide = in.name + kSuffix;
    rename_inputs(nodes, in.name, wide);
    front.push_back(storage_cast(in.name, wide, onnx::DataType::kFloat));
  }
  for (const onnx::ValueInfo& out : g.outputs) {
    if (!is_half(out.elem_type) || fp16_cache_output(nodes, out)) continue;
    onnx::Node* producer = nullptr;
    for (onnx::Node& n : nodes)
      for (std::string& o : n.outputs)
        if (o == out.name) producer = &n, o = out.name + kSuffix;
    if (producer == nullptr) continue;  // an input or initializer served as output: stored as is
    const std::string wide = out.name + kSuffix;
    rename_inputs(nodes, out.name, wide);
    back.push_back(storage_cast(wide, out.name, out.elem_type));
  }
  const int added = static_cast<int>(front.size() + back.size());
  if (added == 0) return 0;
  std::vector<onnx::Node> all = std::move(front);
  for (onnx::Node& n : nodes) all.push_back(std::move(n));
  for (onnx::Node& n : back) all.push_back(std::move(n));
  nodes = std::move(all);
  return added;
}

std::set<std::string> half_matmul_weights(const std::vector<onnx::Node>& nodes, const onnx::Graph& g) {
  // Readers of each value: (node, input index).
  std::map<std::string, std::vector<std::pair<const onnx::Node*, size_t>>> readers;
  for (const onnx::Node& n : nodes)
    for (size_t i = 0; i < n.inputs.size(); ++i) readers[n.inputs[i]].emplace_back(&n, i);
  std::set<std::string> graph_outputs;
  for (const onnx::ValueInfo& o : g.outputs) graph_outputs.insert(o.name);
  // A 2-D Transpose read only as the data of Gathers (a tied embedding: Gather
  // widens half rows itself, and the transposed copy folded at load stays half).
  auto transposed_for_gather = [&](const onnx::Node& n) {
    const std::vector<int64_t> perm = n.attr_ints("perm");
    if (!is_onnx_op(n, "Transpose") || !(perm.empty() || perm == std::vector<int64_t>{1, 0})) return false;
    if (n.outputs.size() != 1 || graph_outputs.count(n.outputs[0]) != 0) return false;
    const auto it = readers.find(n.outputs[0]);
    if (it == readers.end()) return false;
    for (const auto& [r, i] : it->second)
      if (!is_onnx_op(*r, "Gather") || i != 0) return false;
    return true;
  };
  std::set<std::string> keep, other;
  for (const onnx::Node& n : nodes)
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const onnx::Tensor* t = g.initializer(n.inputs[i]);
      if (t == nullptr || !is_half(t->dtype)) continue;
      const bool ok = t->dims.size() == 2 &&
                      ((i == 1 && is_onnx_op(n, "MatMul")) || (i == 0 && transposed_for_gather(n)));
      (ok ? keep : other).insert(t->name);
    }
  for (const onnx::ValueInfo& o : g.outputs) other.insert(o.name);
  // Names read inside subgraphs (If branches) get the widened value.
  std::function<void(const onnx::Graph&)> scan = [&](const onnx::Graph& sub) {
    for (const onnx::Node& n : sub.nodes) {
      other.insert(n.inputs.begin(), n.inputs.end());
      for (const onnx::Attribute& a : n.attributes)
        if (a.g) scan(*a.g);
    }
  };
  for (const onnx::Node& n : nodes)
    for (const onnx::Attribute& a : n.attributes)
      if (a.g) scan(*a.g);
  for (const std::string& name : other) keep.erase(name);
  return keep;
}

int set_kv_cache_dtype(const std::vector<onnx::Node>& nodes, onnx::Graph& g, onnx::DataType dtype) {
  std::set<std::string> cache;
  for (const onnx::Node& n : nodes) {
    if (!is_cache_op(n)) continue;
    for (size_t i : {3, 4})
      if (n.has_input(i)) cache.insert(n.inputs[i]);
    for (size_t i : {1, 2})
      if (n.has_output(i)) cache.insert(n.outputs[i]);
  }
  int changed = 0;
  for (auto* list : {&g.inputs, &g.outputs})
    for (onnx::ValueInfo& v : *list)
      if (cache.count(v.name) != 0 && v.elem_type != dtype &&
          (v.elem_type == onnx::DataType::kFloat || v.elem_type == onnx::DataType::kFloat16 ||
           v.elem_type == onnx::DataType::kBfloat16)) {
        v.elem_type = dtype;
        if (dtype == onnx::DataType::kInt8 && v.dims.size() == 4 && v.dims[3].value > 0) v.dims[3].value += 4;
        ++changed;
      }
  return changed;
}

}  // namespace nbits::graph
