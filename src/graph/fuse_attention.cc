// fuse_mha_into_gqa (graph/rewrites.h): the builder's MultiHeadAttention layout,
//   k = Reshape(k_new, [0,0,Nkv,-1]) -> Transpose(0,2,1,3); present = Concat(past, k, axis 2)
//   key = Unsqueeze(present, 2) -> Expand -> Reshape -> Transpose(0,2,1,3) -> Reshape  (repeat_kv)
//   MultiHeadAttention(q, key, value, attention_bias = causal mask of attention_mask)
// becomes GroupQueryAttention(q, k_new, v_new, past_k, past_v, seqlens_k, total_length)
// writing present in place (one shared KV buffer, no per-step Concat or repeat_kv
// copies); the nodes only the old path read are dropped.
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "graph/rewrite_util.h"
#include "graph/rewrites.h"

namespace nbits::graph {
namespace {

struct Index {
  std::map<std::string, size_t> producer;
  std::set<std::string> inputs, outputs;
};

Index index_of(const std::vector<onnx::Node>& nodes, const onnx::Graph& g) {
  Index ix;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const std::string& o : nodes[i].outputs) ix.producer[o] = i;
  for (const onnx::ValueInfo& v : g.inputs) ix.inputs.insert(v.name);
  for (const onnx::ValueInfo& v : g.outputs) ix.outputs.insert(v.name);
  return ix;
}

// The ai.onnx node of `type` producing `value`, or null.
const onnx::Node* producer(const std::vector<onnx::Node>& nodes, const Index& ix, const std::string& value,
                           const char* type) {
  const auto it = ix.producer.find(value);
  if (it == ix.producer.end() || !is_onnx_op(nodes[it->second], type)) return nullptr;
  return &nodes[it->second];
}

// Values of a small int64 constant (initializer or Constant node), nullopt otherwise.
std::optional<std::vector<int64_t>> const_ints(const std::vector<onnx::Node>& nodes, const Index& ix,
                                               const onnx::Graph& g, const std::string& name) {
  const onnx::Tensor* t = g.initializer(name);
  if (t == nullptr)
    if (const onnx::Node* c = producer(nodes, ix, name, "Constant"))
      if (const onnx::Attribute* a = c->attr("value"); a != nullptr && a->t) t = &*a->t;
  if (t == nullptr || t->dtype != onnx::DataType::kInt64 || t->numel() > 8) return std::nullopt;
  return std::vector<int64_t>(t->data<int64_t>(), t->data<int64_t>() + t->numel());
}

bool perm_0213(const onnx::Node* n) {
  return n != nullptr && n->attr_ints("perm") == std::vector<int64_t>{0, 2, 1, 3};
}

struct KvChain {
  std::string fresh;    // [B, S, Nkv * H]: the new keys (values) of this step
  std::string past;     // graph input [B, Nkv, P, H]
  std::string present;  // graph output, was Concat(past, new)
  size_t concat = 0;    // node index of that Concat
  int64_t kv_heads = 0;
};

// Follows MultiHeadAttention's key (or value) input back through repeat_kv to the
// Concat(past, new) that makes the present.
std::optional<KvChain> trace_kv(const std::vector<onnx::Node>& nodes, const Index& ix, const onnx::Graph& g,
                                const std::string& mha_input) {
  const onnx::Node* r4 = producer(nodes, ix, mha_input, "Reshape");
  const onnx::Node* t2 = r4 ? producer(nodes, ix, r4->inputs[0], "Transpose") : nullptr;
  const onnx::Node* r3 = perm_0213(t2) ? producer(nodes, ix, t2->inputs[0], "Reshape") : nullptr;
  const onnx::Node* ex = r3 ? producer(nodes, ix, r3->inputs[0], "Expand") : nullptr;
  const onnx::Node* un = ex ? producer(nodes, ix, ex->inputs[0], "Unsqueeze") : nullptr;
  if (un == nullptr) return std::nullopt;
  std::vector<int64_t> axes = un->attr_ints("axes");
  if (axes.empty() && un->has_input(1)) axes = const_ints(nodes, ix, g, un->inputs[1]).value_or(axes);
  if (axes != std::vector<int64_t>{2}) return std::nullopt;
  KvChain kv;
  kv.present = un->inputs[0];
  const onnx::Node* cat = producer(nodes, ix, kv.present, "Concat");
  if (cat == nullptr || cat->inputs.size() != 2 || cat->attr_int("axis", 0) != 2 ||
      ix.outputs.count(kv.present) == 0 || ix.inputs.count(cat->inputs[0]) == 0)
    return std::nullopt;
  kv.concat = ix.producer.at(kv.present);
  kv.past = cat->inputs[0];
  const onnx::Node* t1 = producer(nodes, ix, cat->inputs[1], "Transpose");
  const onnx::Node* r1 = perm_0213(t1) ? producer(nodes, ix, t1->inputs[0], "Reshape") : nullptr;
  if (r1 == nullptr || !r1->has_input(1)) return std::nullopt;
  const auto shape = const_ints(nodes, ix, g, r1->inputs[1]);
  if (!shape || shape->size() != 4 || (*shape)[0] != 0 || (*shape)[1] != 0 || (*shape)[2] <= 0)
    return std::nullopt;
  kv.kv_heads = (*shape)[2];
  kv.fresh = r1->inputs[0];
  return kv;
}

// The graph input an attention_bias is computed from when it is the builder's
// causal mask: exactly one graph input read for its values (others only through
// Shape), an integer [B, T] one, and no float constant of more than one element.
std::optional<std::string> causal_mask_source(const std::vector<onnx::Node>& nodes, const Index& ix,
                                              const onnx::Graph& g, const std::string& bias) {
  std::set<std::string> seen, direct;
  bool ok = true;
  std::function<void(const std::string&)> visit = [&](const std::string& v) {
    if (!ok || v.empty() || !seen.insert(v).second) return;
    if (ix.inputs.count(v) != 0 && g.initializer(v) == nullptr) {
      direct.insert(v);
      return;
    }
    if (const onnx::Tensor* t = g.initializer(v)) {
      const bool is_float = t->dtype == onnx::DataType::kFloat || t->dtype == onnx::DataType::kFloat16 ||
                            t->dtype == onnx::DataType::kBfloat16;
      ok = !is_float || t->numel() <= 1;
      return;
    }
    const auto it = ix.producer.find(v);
    if (it == ix.producer.end()) return;
    const onnx::Node& n = nodes[it->second];
    if (is_onnx_op(n, "Shape")) return;  // reads only the shape
    if (is_onnx_op(n, "Constant")) {
      const onnx::Attribute* a = n.attr("value");
      ok = a != nullptr && a->t && (a->t->numel() <= 1 || a->t->dtype == onnx::DataType::kInt64);
      return;
    }
    if (!n.domain.empty() && n.domain != "ai.onnx") {
      ok = false;
      return;
    }
    for (const std::string& in : n.inputs) visit(in);
  };
  visit(bias);
  if (!ok || direct.size() != 1) return std::nullopt;
  const std::string mask = *direct.begin();
  for (const onnx::ValueInfo& in : g.inputs)
    if (in.name == mask &&
        (in.elem_type == onnx::DataType::kInt64 || in.elem_type == onnx::DataType::kInt32) &&
        (!in.has_shape || in.dims.size() == 2))
      return mask;
  return std::nullopt;
}

// Drops nodes none of whose outputs reaches a graph output (nodes are in topological order).
void remove_dead_nodes(std::vector<onnx::Node>& nodes, const Index& ix) {
  std::set<std::string> live = ix.outputs;
  std::vector<bool> removed(nodes.size(), true);
  for (size_t i = nodes.size(); i-- > 0;) {
    bool used = false;
    for (const std::string& o : nodes[i].outputs) used = used || (!o.empty() && live.count(o) != 0);
    if (!used) continue;
    removed[i] = false;
    live.insert(nodes[i].inputs.begin(), nodes[i].inputs.end());
    for (const onnx::Attribute& a : nodes[i].attributes)  // values subgraphs capture
      if (a.g)
        for (const onnx::Node& sub : a.g->nodes) live.insert(sub.inputs.begin(), sub.inputs.end());
  }
  erase_removed(nodes, removed);
}

// GroupQueryAttention keeps an fp32 or fp16 cache: a bf16 one becomes fp32.
void bf16_to_float(std::vector<onnx::ValueInfo>& vs, const std::string& name) {
  for (onnx::ValueInfo& v : vs)
    if (v.name == name && v.elem_type == onnx::DataType::kBfloat16) v.elem_type = onnx::DataType::kFloat;
}

}  // namespace

int fuse_mha_into_gqa(std::vector<onnx::Node>& nodes, onnx::Graph& g) {
  const std::vector<onnx::Node> original = nodes;
  const Index ix = index_of(nodes, g);
  static constexpr const char* kSeqlens = "nbits/gqa/seqlens_k";
  static constexpr const char* kTotal = "nbits/gqa/total_sequence_length";
  std::vector<bool> removed(nodes.size(), false);
  std::vector<KvChain> fused;
  std::string mask;
  for (onnx::Node& n : nodes) {
    if (n.op_type != "MultiHeadAttention" || n.domain != "com.microsoft" || n.inputs.size() < 6) continue;
    if (n.has_input(3) || n.has_input(4) || !n.has_input(5) || n.has_input(6) || n.has_input(7) ||
        n.inputs.size() > 8 || n.outputs.empty() || n.outputs[0].empty())
      continue;
    bool more_outputs = false;  // present_key / present_value of MultiHeadAttention itself
    for (size_t i = 1; i < n.outputs.size(); ++i) more_outputs = more_outputs || !n.outputs[i].empty();
    if (more_outputs) continue;
    const auto k = trace_kv(nodes, ix, g, n.inputs[1]);
    const auto v = k ? trace_kv(nodes, ix, g, n.inputs[2]) : std::nullopt;
    const auto m = v ? causal_mask_source(nodes, ix, g, n.inputs[5]) : std::nullopt;
    if (!m || k->kv_heads != v->kv_heads || (!mask.empty() && *m != mask)) continue;
    mask = *m;
    onnx::Node gqa;
    gqa.name = n.name;
    gqa.op_type = "GroupQueryAttention";
    gqa.domain = "com.microsoft";
    gqa.inputs = {n.inputs[0], k->fresh, v->fresh, k->past, v->past, kSeqlens, kTotal};
    gqa.outputs = {n.outputs[0], k->present, v->present};
    gqa.attributes = {int_attribute("num_heads", n.attr_int_required("num_heads")),
                      int_attribute("kv_num_heads", k->kv_heads),
                      float_attribute("scale", n.attr_float("scale", 0))};
    n = std::move(gqa);
    removed[k->concat] = removed[v->concat] = true;
    fused.push_back(*k);
    fused.push_back(*v);
  }
  if (fused.empty()) return 0;
  erase_removed(nodes, removed);
  onnx::Node lengths;
  lengths.name = "<AttentionMaskLengths>";
  lengths.op_type = "AttentionMaskLengths";
  lengths.domain = "nbits.internal";
  lengths.inputs = {mask};
  lengths.outputs = {kSeqlens, kTotal};
  nodes.insert(nodes.begin(), std::move(lengths));
  remove_dead_nodes(nodes, ix);
  // Safe only when nothing else still reads the old present/past values (their
  // shapes change: the shared buffer holds the whole capacity).
  std::map<std::string, int> reads;
  for (const onnx::Node& n : nodes)
    for (const std::string& in : n.inputs) ++reads[in];
  for (const KvChain& kv : fused)
    if (reads[kv.present] != 0 || reads[kv.past] != 1) {
      nodes = original;
      return 0;
    }
  for (const KvChain& kv : fused) {
    bf16_to_float(g.inputs, kv.past);
    bf16_to_float(g.outputs, kv.present);
  }
  return static_cast<int>(fused.size() / 2);
}

}  // namespace nbits::graph
