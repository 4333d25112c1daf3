// Load-time fusions for plain-op decoders (Hugging Face Optimum / torch.onnx.export,
// the onnx-community / transformers.js exports), graph/rewrites.h:
//
// fuse_rms_norm: RMSNorm written out as
//   Pow(x, 2) -> ReduceMean(-1, keepdims) -> Add(eps) -> Sqrt -> Div(1, .) -> Mul(x, .)
//   [-> Cast(float)] -> Mul(gamma, .)
// (also Reciprocal(Sqrt) or Div(x, Sqrt), Mul(x, x) for the square, gamma as Add(w, 1)
// for Gemma) becomes SimplifiedLayerNormalization(x, gamma); when x = [Cast(float)]
// Add(a, b) of two activations, SkipSimplifiedLayerNormalization(a, b, gamma) whose
// output 3 (the sum) replaces x for the residual.
//
// fuse_optimum_attention: per layer
//   q/k/v = Transpose(Reshape(proj, [B,S,N,D]), 0213) (q/k optionally through a
//   per-head SimplifiedLayerNormalization: Qwen3), rotary q*cos + rotate_half(q)*sin
//   with cos/sin = Unsqueeze(cos(position_ids x inv_freq) * scaling, 1),
//   present = Concat(past, new, -2), repeat_kv = Reshape(Expand(Unsqueeze(present, 2))),
//   Softmax(Mul(q, c) @ Mul(k^T, c) + mask) [-> IsNaN/Where] @ v -> Transpose -> Reshape
// becomes GroupQueryAttention(q, k, v, past_k, past_v, seqlens_k, total, cos_cache,
// sin_cache) with do_rotary (half-split), writing present in place into one shared
// KV buffer. cos/sin caches are computed once at load from inv_freq. The mask must be
// computed from attention_mask (and shapes) only: batch 1 without padding, as
// fuse_mha_into_gqa.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>

#include "base/error.h"
#include "base/fp16.h"
#include "graph/rewrite_util.h"
#include "graph/rewrites.h"

namespace nbits::graph {
namespace {

struct Index {
  std::map<std::string, size_t> producer;
  std::map<std::string, int> uses;  // node reads; a graph output counts 2 (never fused away)
  std::set<std::string> inputs, outputs;
};

Index index_of(const std::vector<onnx::Node>& nodes, const onnx::Graph& g) {
  Index ix;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const std::string& o : nodes[i].outputs) ix.producer[o] = i;
    for (const std::string& in : nodes[i].inputs) ++ix.uses[in];
  }
  for (const onnx::ValueInfo& v : g.inputs) ix.inputs.insert(v.name);
  for (const onnx::ValueInfo& v : g.outputs) {
    ix.outputs.insert(v.name);
    ix.uses[v.name] += 2;
  }
  return ix;
}

// A Cast to a float type: of a float value, the identity inside a session (every float
// is computed in fp32, graph::compute_dtype); fp16 exports cast norms and rotary to fp32
// and back. Used only where the value cast is itself float.
bool float_cast(const onnx::Node& n) {
  const int64_t to = n.attr_int("to", 0);
  return to == static_cast<int64_t>(onnx::DataType::kFloat) ||
         to == static_cast<int64_t>(onnx::DataType::kFloat16) ||
         to == static_cast<int64_t>(onnx::DataType::kBfloat16);
}

bool float_type(onnx::DataType t) {
  return t == onnx::DataType::kFloat || t == onnx::DataType::kFloat16 || t == onnx::DataType::kBfloat16;
}

std::vector<float> widened(const onnx::Tensor& t) {
  std::vector<float> v(t.numel());
  const uint8_t* p = t.bytes.data();  // may be misaligned (onnx/model.h): read by memcpy
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (t.dtype == onnx::DataType::kFloat) {
      std::memcpy(&v[i], p + i * 4, 4);
      continue;
    }
    v[i] =
        t.dtype == onnx::DataType::kFloat16 ? fp16_to_float(load_u16(p, i)) : bf16_to_float(load_u16(p, i));
  }
  return v;
}

class Matcher {
 public:
  Matcher(const std::vector<onnx::Node>& nodes, const Index& ix, const onnx::Graph& g)
      : nodes_(nodes), ix_(ix), g_(g) {}

  // The ai.onnx node of `type` producing `value`, or null.
  const onnx::Node* prod(const std::string& value, const char* type) const {
    const onnx::Node* n = any_prod(value);
    return n != nullptr && is_onnx_op(*n, type) ? n : nullptr;
  }
  const onnx::Node* any_prod(const std::string& value) const {
    const auto it = ix_.producer.find(value);
    return it == ix_.producer.end() ? nullptr : &nodes_[it->second];
  }
  size_t index(const std::string& value) const { return ix_.producer.at(value); }
  int uses(const std::string& v) const {
    const auto it = ix_.uses.find(v);
    return it == ix_.uses.end() ? 0 : it->second;
  }
  bool graph_input(const std::string& v) const {
    return ix_.inputs.count(v) != 0 && g_.initializer(v) == nullptr;
  }
  bool graph_output(const std::string& v) const { return ix_.outputs.count(v) != 0; }

  // An initializer, or a Constant node's value, through Identity nodes.
  const onnx::Tensor* constant(const std::string& v) const {
    std::string name = v;
    for (int hops = 0; hops < 4; ++hops) {
      if (const onnx::Tensor* t = g_.initializer(name)) return t;
      const onnx::Node* n = any_prod(name);
      if (n == nullptr) return nullptr;
      if (is_onnx_op(*n, "Constant")) {
        const onnx::Attribute* a = n->attr("value");
        return a != nullptr && a->t ? &*a->t : nullptr;
      }
      if (!is_onnx_op(*n, "Identity") || n->inputs.size() != 1) return nullptr;
      name = n->inputs[0];
    }
    return nullptr;
  }
  // The initializer name behind Identity nodes, or v itself.
  std::string initializer_name(const std::string& v) const {
    std::string name = v;
    for (int hops = 0; hops < 4 && g_.initializer(name) == nullptr; ++hops) {
      const onnx::Node* n = prod(name, "Identity");
      if (n == nullptr || n->inputs.size() != 1) return v;
      name = n->inputs[0];
    }
    return g_.initializer(name) != nullptr ? name : v;
  }
  std::optional<float> scalar(const std::string& v) const {
    const onnx::Tensor* t = constant(v);
    if (t == nullptr || t->numel() != 1) return std::nullopt;
    if (t->dtype == onnx::DataType::kFloat) return *t->data<float>();
    if (t->dtype == onnx::DataType::kDouble) return static_cast<float>(*t->data<double>());
    if (t->dtype == onnx::DataType::kFloat16) return fp16_to_float(*t->data<uint16_t>());
    if (t->dtype == onnx::DataType::kBfloat16) return bf16_to_float(*t->data<uint16_t>());
    return std::nullopt;
  }
  std::optional<std::vector<int64_t>> ints(const std::string& v) const {
    const onnx::Tensor* t = constant(v);
    if (t == nullptr || t->numel() > 16) return std::nullopt;
    if (t->dtype == onnx::DataType::kInt64)
      return std::vector<int64_t>(t->data<int64_t>(), t->data<int64_t>() + t->numel());
    if (t->dtype == onnx::DataType::kInt32)
      return std::vector<int64_t>(t->data<int32_t>(), t->data<int32_t>() + t->numel());
    return std::nullopt;
  }
  // The axes of an Unsqueeze / ReduceMean (attribute or input 1).
  std::optional<std::vector<int64_t>> axes(const onnx::Node& n) const {
    if (n.attr("axes") != nullptr) return n.attr_ints("axes");
    if (n.has_input(1)) return ints(n.inputs[1]);
    return std::nullopt;
  }
  // Through Cast(to=float) nodes.
  std::string skip_float_casts(const std::string& v) const {
    std::string cur = v;
    for (int hops = 0; hops < 4; ++hops) {
      const onnx::Node* c = prod(cur, "Cast");
      if (c == nullptr || !float_cast(*c)) break;
      cur = c->inputs[0];
    }
    return cur;
  }
  // The other input of a binary node given one of them; "" if neither matches.
  static std::string other(const onnx::Node& n, const std::string& one) {
    if (n.inputs.size() != 2) return "";
    if (n.inputs[0] == one) return n.inputs[1];
    if (n.inputs[1] == one) return n.inputs[0];
    return "";
  }
  // Output columns of a weight projection (MatMul with a 2-D constant B, MatMulNBits,
  // either + Add of a 1-D constant bias); -1 when not one.
  int64_t projection_cols(const std::string& v) const {
    const onnx::Node* n = any_prod(v);
    if (n == nullptr) return -1;
    if (is_onnx_op(*n, "Add") && n->inputs.size() == 2)
      for (int i = 0; i < 2; ++i)
        if (const onnx::Tensor* b = constant(n->inputs[i]); b != nullptr && b->dims.size() == 1) {
          const int64_t inner = projection_cols(n->inputs[1 - i]);
          return inner == b->dims[0] ? inner : -1;
        }
    if (is_onnx_op(*n, "Mul") && n->inputs.size() == 2)  // dynamic int8: Cast(MatMulInteger(.)) * scales
      for (int i = 0; i < 2; ++i) {
        const onnx::Node* c = prod(n->inputs[i], "Cast");
        const onnx::Node* mi = c ? prod(c->inputs[0], "MatMulInteger") : nullptr;
        if (mi == nullptr || mi->inputs.size() < 2) continue;
        const onnx::Tensor* b = constant(mi->inputs[1]);
        return b != nullptr && b->dims.size() == 2 ? b->dims[1] : -1;
      }
    if (n->op_type == kMatMulDequantizedOp && n->domain == kInternalDomain && n->inputs.size() >= 2)
      if (const onnx::Tensor* b = constant(n->inputs[1]); b != nullptr && b->dims.size() == 2)
        return b->dims[1];
    if (n->op_type == "MatMulNBits") {
      const onnx::Attribute* a = n->attr("N");
      return a != nullptr ? a->i : -1;
    }
    if (is_onnx_op(*n, "MatMul") && n->inputs.size() == 2)
      if (const onnx::Tensor* b = constant(n->inputs[1]); b != nullptr && b->dims.size() == 2)
        return b->dims[1];
    return -1;
  }

  const std::vector<onnx::Node>& nodes_;
  const Index& ix_;
  const onnx::Graph& g_;
};

bool only_use(const Matcher& m, const std::string& v) { return m.uses(v) == 1; }

// Topological order of rewritten nodes (graph/rewrites.h sorted_nodes); `extra` names
// count as sources (initializers added once the rewrite is kept).
std::vector<onnx::Node> sort_nodes(std::vector<onnx::Node> nodes, const onnx::Graph& g,
                                   const std::vector<std::string>& extra = {}) {
  onnx::Graph tmp;
  tmp.inputs = g.inputs;
  tmp.outputs = g.outputs;
  tmp.initializers = g.initializers;
  for (const std::string& e : extra) {
    onnx::ValueInfo v;
    v.name = e;
    tmp.inputs.push_back(std::move(v));
  }
  tmp.nodes = std::move(nodes);
  return sorted_nodes(tmp);
}

}  // namespace

namespace {

// Readers of each value, to follow a chain forward.
struct Readers {
  Readers(const std::vector<onnx::Node>& nodes, const Matcher& m) : nodes_(nodes), m_(m) {
    for (size_t i = 0; i < nodes.size(); ++i)
      for (const std::string& in : nodes[i].inputs) of[in].push_back(i);
  }
  // The index of the one node (of `type`) reading v, its only use; SIZE_MAX otherwise.
  size_t sole(const std::string& v, const char* type) const {
    if (!only_use(m_, v)) return SIZE_MAX;
    const auto it = of.find(v);
    if (it == of.end() || it->second.size() != 1) return SIZE_MAX;
    return is_onnx_op(nodes_[it->second[0]], type) ? it->second[0] : SIZE_MAX;
  }
  std::map<std::string, std::vector<size_t>> of;

 private:
  const std::vector<onnx::Node>& nodes_;
  const Matcher& m_;
};

}  // namespace

int fuse_rms_norm(std::vector<onnx::Node>& nodes, const onnx::Graph& g) {
  const Index ix = index_of(nodes, g);
  const Matcher m(nodes, ix, g);
  std::vector<bool> removed(nodes.size(), false);
  const Readers rd(nodes, m);
  const auto& readers = rd.of;
  auto sole_reader = [&](const std::string& v, const char* type) { return rd.sole(v, type); };
  int fused = 0;
  for (size_t pi = 0; pi < nodes.size(); ++pi) {
    const onnx::Node& sq = nodes[pi];
    if (removed[pi] || sq.outputs.size() != 1 || sq.inputs.size() != 2) continue;
    std::string x;
    if (is_onnx_op(sq, "Pow") && m.scalar(sq.inputs[1]) == 2.0f) x = sq.inputs[0];
    if (is_onnx_op(sq, "Mul") && sq.inputs[0] == sq.inputs[1]) x = sq.inputs[0];
    if (x.empty()) continue;
    std::vector<size_t> chain{pi};
    const size_t ri = sole_reader(sq.outputs[0], "ReduceMean");
    if (ri == SIZE_MAX) continue;
    const onnx::Node& rm = nodes[ri];
    if (rm.attr_int("keepdims", 1) != 1 || m.axes(rm) != std::vector<int64_t>{-1}) continue;
    const size_t ai = sole_reader(rm.outputs[0], "Add");
    if (ai == SIZE_MAX) continue;
    const std::optional<float> eps = m.scalar(Matcher::other(nodes[ai], rm.outputs[0]));
    if (!eps || !(*eps >= 0.0f)) continue;
    const size_t si = sole_reader(nodes[ai].outputs[0], "Sqrt");
    if (si == SIZE_MAX) continue;
    chain.insert(chain.end(), {ri, ai, si});
    const std::string& sv = nodes[si].outputs[0];
    // The normalized value n = x / sqrt(...).
    size_t ni = SIZE_MAX;
    const auto rit = readers.find(sv);
    if (!only_use(m, sv) || rit == readers.end()) continue;
    const onnx::Node& after = nodes[rit->second[0]];
    if (is_onnx_op(after, "Div") && after.inputs.size() == 2 && after.inputs[1] == sv) {
      if (after.inputs[0] == x) {
        ni = rit->second[0];
      } else if (m.scalar(after.inputs[0]) == 1.0f) {
        const size_t mi = sole_reader(after.outputs[0], "Mul");
        if (mi != SIZE_MAX && Matcher::other(nodes[mi], after.outputs[0]) == x) {
          chain.push_back(rit->second[0]);
          ni = mi;
        }
      }
    } else if (is_onnx_op(after, "Reciprocal")) {
      const size_t mi = sole_reader(after.outputs[0], "Mul");
      if (mi != SIZE_MAX && Matcher::other(nodes[mi], after.outputs[0]) == x) {
        chain.push_back(rit->second[0]);
        ni = mi;
      }
    }
    if (ni == SIZE_MAX) continue;
    chain.push_back(ni);
    std::string nv = nodes[ni].outputs[0];
    if (!only_use(m, nv)) continue;
    if (const size_t ci = sole_reader(nv, "Cast"); ci != SIZE_MAX && float_cast(nodes[ci])) {
      chain.push_back(ci);
      nv = nodes[ci].outputs[0];
    }
    const size_t wi = sole_reader(nv, "Mul");
    if (wi == SIZE_MAX) continue;
    std::string gamma = Matcher::other(nodes[wi], nv);
    // gamma: a 1-D float constant, or Add(w, 1) of one (Gemma's (1 + w), folded at load).
    const onnx::Tensor* gt = m.constant(gamma);
    bool ok = gt != nullptr && gt->dims.size() == 1 && float_type(gt->dtype);
    if (ok) {
      gamma = m.initializer_name(gamma);
    } else if (const onnx::Node* plus = m.prod(gamma, "Add"); plus != nullptr && plus->inputs.size() == 2) {
      for (int i = 0; i < 2 && !ok; ++i) {
        const onnx::Tensor* w = m.constant(plus->inputs[i]);
        ok = w != nullptr && w->dims.size() == 1 && float_type(w->dtype) &&
             m.scalar(plus->inputs[1 - i]).has_value();
      }
    }
    if (!ok) continue;
    bool taken = false;
    for (size_t c : chain) taken = taken || removed[c];
    if (taken) continue;

    onnx::Node& out = nodes[wi];
    const std::string y = out.outputs[0];
    // Skip form: x = [Cast(float)] Add(a, b) of two activations read by nothing else.
    std::string add_v = x;
    size_t cast_i = SIZE_MAX;
    if (const onnx::Node* c = m.prod(x, "Cast");
        c != nullptr && float_cast(*c) && only_use(m, c->inputs[0])) {
      cast_i = m.index(x);
      add_v = c->inputs[0];
    }
    const onnx::Node* add = m.prod(add_v, "Add");
    const bool skip = add != nullptr && add->inputs.size() == 2 && add->outputs.size() == 1 &&
                      m.constant(add->inputs[0]) == nullptr && m.constant(add->inputs[1]) == nullptr &&
                      !m.graph_output(add_v) && (add_v == x || only_use(m, add_v)) &&
                      !removed[m.index(add_v)] && add->inputs[0] != add->inputs[1];
    onnx::Node norm;
    norm.name = out.name;
    if (skip) {
      norm.op_type = "SkipSimplifiedLayerNormalization";
      norm.domain = "com.microsoft";
      norm.inputs = {add->inputs[0], add->inputs[1], gamma};
      // Readers of x besides the norm's own (the square and the scaling Mul): the residual.
      int own = 0;
      for (size_t c : chain)
        for (const std::string& in : nodes[c].inputs) own += in == x;
      const bool residual_read = m.uses(x) > own;
      norm.outputs = {y, "", "", residual_read ? x : ""};
      norm.attributes = {float_attribute("epsilon", *eps)};
      removed[m.index(add_v)] = true;
      if (cast_i != SIZE_MAX) removed[cast_i] = true;
    } else {
      norm.op_type = "SimplifiedLayerNormalization";
      norm.domain = "";
      norm.inputs = {x, gamma};
      norm.outputs = {y};
      norm.attributes = {int_attribute("axis", -1), float_attribute("epsilon", *eps)};
    }
    for (size_t c : chain) removed[c] = true;
    out = std::move(norm);
    ++fused;
  }
  erase_removed(nodes, removed);
  if (fused > 0) nodes = sort_nodes(std::move(nodes), g);
  return fused;
}

namespace {

// The graph input a mask is computed from when it is the causal mask of
// attention_mask: one integer [B, T] graph input read for its values (others only
// through Shape), no float constant of more than one element, ai.onnx ops only.
// A sliding window: key k is visible to query q when Greater(k, Sub(q, W)), W a positive integer
// constant (HF's sliding_window: the W keys [q - W + 1, q], GroupQueryAttention's
// local_window_size W); *window is set to it (one value per mask), -1 when none.
std::optional<std::string> causal_mask_source(const Matcher& m, const onnx::Graph& g, const std::string& bias,
                                              int64_t* window) {
  std::set<std::string> seen, direct;
  bool ok = true;
  *window = -1;
  // A sliding-window (or chunked) mask carries its window as an integer constant: only
  // the small axes / indices / offsets of the plain causal mask (and INT64 sentinels of
  // Slice ends) are accepted, so such a mask keeps the general path.
  auto small_ints = [](const onnx::Tensor& t) {
    if (t.dtype != onnx::DataType::kInt64 && t.dtype != onnx::DataType::kInt32) return true;
    for (int64_t i = 0; i < t.numel(); ++i) {
      const int64_t x = t.dtype == onnx::DataType::kInt64 ? t.data<int64_t>()[i] : t.data<int32_t>()[i];
      if ((x > 8 || x < -8) && x < (int64_t{1} << 31) && x > -(int64_t{1} << 31)) return false;
    }
    return true;
  };
  std::function<void(const std::string&)> visit = [&](const std::string& v) {
    if (!ok || v.empty() || !seen.insert(v).second) return;
    if (m.graph_input(v)) {
      direct.insert(v);
      return;
    }
    if (const onnx::Tensor* t = g.initializer(v)) {
      const bool is_float = t->dtype == onnx::DataType::kFloat || t->dtype == onnx::DataType::kFloat16 ||
                            t->dtype == onnx::DataType::kBfloat16;
      ok = (!is_float || t->numel() <= 1) && t->numel() <= 16 && small_ints(*t);
      return;
    }
    const onnx::Node* n = m.any_prod(v);
    if (n == nullptr) return;
    if (is_onnx_op(*n, "Shape")) return;
    if (is_onnx_op(*n, "Constant")) {
      const onnx::Attribute* a = n->attr("value");
      ok = a != nullptr && a->t && (a->t->numel() <= 1 || a->t->dtype == onnx::DataType::kInt64) &&
           a->t->numel() <= 16 && small_ints(*a->t);
      return;
    }
    if (!n->domain.empty() && n->domain != "ai.onnx") {
      ok = false;
      return;
    }
    if (is_onnx_op(*n, "Sub") && n->inputs.size() == 2) {
      const auto w = m.ints(n->inputs[1]);
      bool read_by_greater = false;
      for (const onnx::Node& r : m.nodes_)
        read_by_greater =
            read_by_greater || (is_onnx_op(r, "Greater") && r.inputs.size() == 2 && r.inputs[1] == v);
      if (w && w->size() == 1 && (*w)[0] > 0 && read_by_greater && m.uses(v) == 1) {
        ok = *window == -1 || *window == (*w)[0];
        *window = (*w)[0];
        visit(n->inputs[0]);
        return;
      }
    }
    for (const std::string& in : n->inputs) visit(in);
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

bool has_perm(const onnx::Node* n, std::vector<int64_t> perm) {
  return n != nullptr && n->attr_ints("perm") == perm;
}

// The rotary tables: cos/sin = Unsqueeze([Cast] Mul(Cos|Sin(Concat(f, f)), scaling), 1),
// f = Transpose(MatMul([Cast] Expand(inv_freq), [Cast] Unsqueeze(position_ids, 1)), 021).
struct Rope {
  std::string cos4, sin4;       // the [B,1,S,D] values the layers read
  std::vector<float> inv_freq;  // [D/2]
  float cos_scale = 1, sin_scale = 1;
};

// Positions without a position_ids input (Gemma-3): Unsqueeze(Range(past, ., 1), 0) with past
// = Gather(Shape(past_key), 2), the cache length, as GroupQueryAttention numbers them.
bool past_positions(const Matcher& m, const std::string& v) {
  const onnx::Node* u = m.prod(v, "Unsqueeze");
  const onnx::Node* r =
      u != nullptr && m.axes(*u) == std::vector<int64_t>{0} ? m.prod(u->inputs[0], "Range") : nullptr;
  if (r == nullptr || r->inputs.size() != 3 || m.ints(r->inputs[2]) != std::vector<int64_t>{1}) return false;
  std::string start = r->inputs[0];
  for (const onnx::Node* c = m.prod(start, "Cast"); c != nullptr; c = m.prod(start, "Cast"))
    start = c->inputs[0];
  const onnx::Node* ga = m.prod(start, "Gather");
  const onnx::Node* sh = ga != nullptr && ga->has_input(1) ? m.prod(ga->inputs[0], "Shape") : nullptr;
  return sh != nullptr && m.graph_input(sh->inputs[0]) && m.ints(ga->inputs[1]) == std::vector<int64_t>{2};
}

std::optional<Rope> trace_rope(const Matcher& m, const std::string& cos4, const std::string& sin4) {
  Rope r;
  r.cos4 = cos4;
  r.sin4 = sin4;
  std::string cat;
  for (int which = 0; which < 2; ++which) {
    const onnx::Node* un = m.prod(which == 0 ? cos4 : sin4, "Unsqueeze");
    if (un == nullptr || m.axes(*un) != std::vector<int64_t>{1}) return std::nullopt;
    std::string v = m.skip_float_casts(un->inputs[0]);
    float scale = 1.0f;
    if (const onnx::Node* mul = m.prod(v, "Mul"); mul != nullptr && mul->inputs.size() == 2) {
      int c = m.scalar(mul->inputs[1]) ? 1 : m.scalar(mul->inputs[0]) ? 0 : -1;
      if (c < 0) return std::nullopt;
      scale = *m.scalar(mul->inputs[c]);
      v = m.skip_float_casts(mul->inputs[1 - c]);
    }
    const onnx::Node* trig = m.prod(v, which == 0 ? "Cos" : "Sin");
    if (trig == nullptr) return std::nullopt;
    if (which == 0) {
      cat = trig->inputs[0];
      r.cos_scale = scale;
    } else {
      if (trig->inputs[0] != cat) return std::nullopt;
      r.sin_scale = scale;
    }
  }
  const onnx::Node* cc = m.prod(cat, "Concat");
  if (cc == nullptr || cc->inputs.size() != 2 || cc->inputs[0] != cc->inputs[1] ||
      cc->attr_int("axis", 0) != -1)
    return std::nullopt;
  const onnx::Node* tr = m.prod(cc->inputs[0], "Transpose");
  if (!has_perm(tr, {0, 2, 1})) return std::nullopt;
  const onnx::Node* mm = m.prod(tr->inputs[0], "MatMul");
  if (mm == nullptr || mm->inputs.size() != 2) return std::nullopt;
  const onnx::Node* ex = m.prod(m.skip_float_casts(mm->inputs[0]), "Expand");
  const onnx::Tensor* inv = ex ? m.constant(ex->inputs[0]) : m.constant(m.skip_float_casts(mm->inputs[0]));
  if (inv == nullptr || !float_type(inv->dtype) || inv->numel() < 1 || inv->dims.size() != 3 ||
      inv->dims[2] != 1)
    return std::nullopt;
  std::string pos = mm->inputs[1];
  for (int hops = 0; hops < 4; ++hops) {  // Casts to float (from int64 positions) and back
    const onnx::Node* c = m.prod(pos, "Cast");
    if (c == nullptr) break;
    pos = c->inputs[0];
  }
  const onnx::Node* pu = m.prod(pos, "Unsqueeze");
  if (pu == nullptr || m.axes(*pu) != std::vector<int64_t>{1} ||
      !(m.graph_input(pu->inputs[0]) || past_positions(m, pu->inputs[0])))
    return std::nullopt;
  r.inv_freq = widened(*inv);
  return r;
}

std::optional<std::string> trace_rotary(const Matcher& m, const std::string& y, const std::string& cos4,
                                        const std::string& sin4, int64_t width, std::vector<size_t>& chain,
                                        bool* partial);

// Partial rotary (Phi-3's, also with partial_rotary_factor 1): Y = Concat(rotary(Slice(X, 0, r)),
// Slice(X, r, end), -1) on the last axis, r the rotary tables' width (`width`: Gather(Shape(cos4),
// 3), or that width as a constant where onnxslim folded it): returns X.
std::optional<std::string> trace_partial_rotary(const Matcher& m, const std::string& y,
                                                const std::string& cos4, const std::string& sin4,
                                                int64_t width, std::vector<size_t>& chain) {
  const onnx::Node* cat = m.prod(y, "Concat");
  if (cat == nullptr || cat->inputs.size() != 2 || cat->attr_int("axis", 0) != -1) return std::nullopt;
  const auto rot = trace_rotary(m, cat->inputs[0], cos4, sin4, width, chain, nullptr);
  const onnx::Node* s_rot = rot ? m.prod(*rot, "Slice") : nullptr;
  const onnx::Node* s_pass = m.prod(cat->inputs[1], "Slice");
  if (s_rot == nullptr || s_pass == nullptr || s_rot->inputs[0] != s_pass->inputs[0] ||
      !s_rot->has_input(3) || !s_pass->has_input(3))
    return std::nullopt;
  for (const onnx::Node* s : {s_rot, s_pass}) {
    const auto ax = m.ints(s->inputs[3]);
    if (!ax || !(*ax == std::vector<int64_t>{-1} || *ax == std::vector<int64_t>{3})) return std::nullopt;
    if (s->has_input(4) && m.ints(s->inputs[4]) != std::vector<int64_t>{1}) return std::nullopt;
  }
  // [0, r) and [r, end): r the same value (Unsqueeze of one width), end past any head size (the
  // INT64 sentinel; GroupQueryAttention heads are at most 512 wide).
  auto through_unsqueeze = [&](const std::string& v) {
    const onnx::Node* u = m.prod(v, "Unsqueeze");
    return u != nullptr ? u->inputs[0] : v;
  };
  const auto start = m.ints(s_rot->inputs[1]);
  const auto end = m.ints(s_pass->inputs[2]);
  if (start != std::vector<int64_t>{0} || !end || end->size() != 1 || (*end)[0] < 4096 ||
      through_unsqueeze(s_rot->inputs[2]) != through_unsqueeze(s_pass->inputs[1]))
    return std::nullopt;
  // r = the last dimension of the cos/sin tables: Gather(Shape(cos4), 3), or its value.
  if (m.ints(s_rot->inputs[2]) == std::vector<int64_t>{width}) return s_rot->inputs[0];
  const onnx::Node* ga = m.prod(through_unsqueeze(s_rot->inputs[2]), "Gather");
  const onnx::Node* sh = ga != nullptr && ga->has_input(1) ? m.prod(ga->inputs[0], "Shape") : nullptr;
  const auto idx = sh != nullptr ? m.ints(ga->inputs[1]) : std::nullopt;
  if (sh == nullptr || (sh->inputs[0] != cos4 && sh->inputs[0] != sin4) ||
      !(idx == std::vector<int64_t>{3} || idx == std::vector<int64_t>{-1}))
    return std::nullopt;
  return s_rot->inputs[0];
}

// Y = Add(Mul(X, cos4), Mul(Concat(Neg(Slice(X)), Slice(X), -1), sin4)) (operands in either order):
// returns X. With `partial`, also the partial form above (*partial says which), and its form
// with the empty pass-through part removed (onnxslim on a file whose head size it knows equals
// the tables' width: X = Slice(X', 0, width) is then X' itself, as the caller's check that the
// head size is the width confirms).
std::optional<std::string> trace_rotary(const Matcher& m, const std::string& y, const std::string& cos4,
                                        const std::string& sin4, int64_t width, std::vector<size_t>& chain,
                                        bool* partial) {
  if (partial != nullptr) {
    *partial = false;
    if (auto x = trace_partial_rotary(m, y, cos4, sin4, width, chain)) {
      *partial = true;
      return x;
    }
    auto x = trace_rotary(m, y, cos4, sin4, width, chain, nullptr);
    const onnx::Node* s = x ? m.prod(*x, "Slice") : nullptr;
    if (s != nullptr && s->has_input(3) && m.ints(s->inputs[1]) == std::vector<int64_t>{0} &&
        m.ints(s->inputs[2]) == std::vector<int64_t>{width} &&
        (m.ints(s->inputs[3]) == std::vector<int64_t>{-1} ||
         m.ints(s->inputs[3]) == std::vector<int64_t>{3}) &&
        (!s->has_input(4) || m.ints(s->inputs[4]) == std::vector<int64_t>{1}))
      return s->inputs[0];
    return x;
  }
  const onnx::Node* add = m.prod(y, "Add");
  if (add == nullptr || add->inputs.size() != 2) return std::nullopt;
  for (int order = 0; order < 2; ++order) {
    const onnx::Node* mc = m.prod(add->inputs[order], "Mul");
    const onnx::Node* ms = m.prod(add->inputs[1 - order], "Mul");
    if (mc == nullptr || ms == nullptr) continue;
    const std::string x = Matcher::other(*mc, cos4);
    const std::string rh = Matcher::other(*ms, sin4);
    if (x.empty() || rh.empty()) continue;
    const onnx::Node* cat = m.prod(rh, "Concat");
    if (cat == nullptr || cat->inputs.size() != 2 || cat->attr_int("axis", 0) != -1) continue;
    const onnx::Node* neg = m.prod(cat->inputs[0], "Neg");
    const onnx::Node* s2 = neg ? m.prod(neg->inputs[0], "Slice") : nullptr;
    const onnx::Node* s1 = m.prod(cat->inputs[1], "Slice");
    if (s1 == nullptr || s2 == nullptr || s1->inputs[0] != x || s2->inputs[0] != x) continue;
    // Slices on the last axis: axes -1 (or 3).
    for (const onnx::Node* s : {s1, s2}) {
      const auto ax = s->has_input(3) ? m.ints(s->inputs[3]) : std::nullopt;
      if (!ax || !(*ax == std::vector<int64_t>{-1} || *ax == std::vector<int64_t>{3})) return std::nullopt;
      const auto st = s->has_input(4) ? m.ints(s->inputs[4]) : std::vector<int64_t>{1};
      if (st != std::vector<int64_t>{1}) return std::nullopt;
    }
    chain.push_back(m.index(y));
    return x;
  }
  return std::nullopt;
}

// Attention logit softcapping (Gemma-2, eager attention): *v = Mul(Tanh(Div(x, c)), c) (or
// Mul(x, 1/c) inside, operands of the outer Mul in either order), c > 0 the same scalar: *v
// becomes x and c is returned (GroupQueryAttention's softcap: c tanh(x / c) after the scale);
// 0 and *v unchanged otherwise.
float trace_softcap(const Matcher& m, std::string* v) {
  const onnx::Node* mu = m.prod(*v, "Mul");
  if (mu == nullptr || mu->inputs.size() != 2) return 0.0f;
  for (int i = 0; i < 2; ++i) {
    const auto c = m.scalar(mu->inputs[1 - i]);
    const onnx::Node* th = m.prod(mu->inputs[i], "Tanh");
    if (!c || *c <= 0 || th == nullptr || !only_use(m, mu->inputs[i])) continue;
    const onnx::Node* d = m.prod(th->inputs[0], "Div");
    if (d != nullptr && d->inputs.size() == 2 && m.scalar(d->inputs[1]) == *c) {
      *v = d->inputs[0];
      return *c;
    }
    const onnx::Node* r = m.prod(th->inputs[0], "Mul");
    for (int j = 0; r != nullptr && r->inputs.size() == 2 && j < 2; ++j) {
      const auto inv = m.scalar(r->inputs[1 - j]);
      if (inv && std::fabs(*inv * *c - 1.0f) < 1e-6f) {
        *v = r->inputs[j];
        return *c;
      }
    }
  }
  return 0.0f;
}

// repeat_kv: Reshape(Expand(Unsqueeze(v, 2), .), .) -> v; anything else -> itself.
std::string skip_repeat_kv(const Matcher& m, const std::string& v) {
  const onnx::Node* r = m.prod(v, "Reshape");
  const onnx::Node* e = r ? m.prod(r->inputs[0], "Expand") : nullptr;
  const onnx::Node* u = e ? m.prod(e->inputs[0], "Unsqueeze") : nullptr;
  if (u == nullptr || m.axes(*u) != std::vector<int64_t>{2}) return v;
  return u->inputs[0];
}

// The last element of a Reshape target: a constant, or Concat(..., constant [1]).
int64_t last_dim(const Matcher& m, const std::string& shape) {
  if (const auto s = m.ints(shape); s && !s->empty()) return s->back();
  const onnx::Node* c = m.prod(shape, "Concat");
  if (c == nullptr || c->inputs.empty()) return -1;
  const auto s = m.ints(c->inputs.back());
  return s && s->size() == 1 ? s->back() : -1;
}

struct Head {
  std::string flat;      // [B, S, N*D] input of GQA
  std::string per_head;  // set when a per-head norm sits between: [B,S,N,D] value to flatten
  int64_t heads = 0, head_dim = 0;
  size_t norm = SIZE_MAX, reshape = SIZE_MAX;  // with per_head: the norm and the Reshape in front
  std::string reshaped;                        // that Reshape's output
};

// X = Transpose([SimplifiedLayerNormalization] Reshape(proj, [B,S,N,D]), 0213), or (Gemma-3)
// SimplifiedLayerNormalization([Cast] Transpose(Reshape(proj, [B,S,N,D]), 0213)): a per-head norm
// over D, the same on either side of the transpose.
std::optional<Head> trace_head(const Matcher& m, const std::string& x) {
  Head h;
  std::string v;  // the Reshape's output
  if (const onnx::Node* n = m.any_prod(x); n != nullptr && n->op_type == "SimplifiedLayerNormalization") {
    const onnx::Node* t = m.prod(m.skip_float_casts(n->inputs[0]), "Transpose");
    if (!has_perm(t, {0, 2, 1, 3})) return std::nullopt;
    h.per_head = x;
    h.norm = m.index(x);
    v = t->inputs[0];
  } else {
    const onnx::Node* t = m.prod(x, "Transpose");
    if (!has_perm(t, {0, 2, 1, 3})) return std::nullopt;
    v = t->inputs[0];
    if (const onnx::Node* n2 = m.any_prod(v);
        n2 != nullptr && n2->op_type == "SimplifiedLayerNormalization") {
      h.per_head = v;
      h.norm = m.index(v);
      v = m.skip_float_casts(n2->inputs[0]);
    }
  }
  const onnx::Node* r = m.prod(v, "Reshape");
  if (r == nullptr || !r->has_input(1)) return std::nullopt;
  if (!h.per_head.empty()) {
    h.reshape = m.index(v);
    h.reshaped = v;
  }
  h.head_dim = last_dim(m, r->inputs[1]);
  const int64_t cols = m.projection_cols(r->inputs[0]);
  if (h.head_dim <= 0 || cols <= 0 || cols % h.head_dim != 0) return std::nullopt;
  h.heads = cols / h.head_dim;
  h.flat = r->inputs[0];
  return h;
}

struct KvSide {
  std::string past, present, fresh_rotated;
  size_t concat = 0;
};

// present = Concat(past, new, -2) with past a graph input and present a graph output.
std::optional<KvSide> trace_present(const Matcher& m, const std::string& present) {
  const onnx::Node* c = m.prod(present, "Concat");
  if (c == nullptr || c->inputs.size() != 2 || !m.graph_output(present) || !m.graph_input(c->inputs[0]))
    return std::nullopt;
  const int64_t axis = c->attr_int("axis", 0);
  if (axis != -2 && axis != 2) return std::nullopt;
  KvSide s;
  s.past = c->inputs[0];
  s.present = present;
  s.fresh_rotated = c->inputs[1];
  s.concat = m.index(present);
  return s;
}

// Drops nodes none of whose outputs reaches a graph output (nodes in topological order).
void remove_dead(std::vector<onnx::Node>& nodes, const onnx::Graph& g) {
  std::set<std::string> live;
  for (const onnx::ValueInfo& v : g.outputs) live.insert(v.name);
  std::vector<bool> removed(nodes.size(), true);
  for (size_t i = nodes.size(); i-- > 0;) {
    bool used = false;
    for (const std::string& o : nodes[i].outputs) used = used || (!o.empty() && live.count(o) != 0);
    if (!used) continue;
    removed[i] = false;
    live.insert(nodes[i].inputs.begin(), nodes[i].inputs.end());
    for (const onnx::Attribute& a : nodes[i].attributes)
      if (a.g)
        for (const onnx::Node& sub : a.g->nodes) live.insert(sub.inputs.begin(), sub.inputs.end());
  }
  erase_removed(nodes, removed);
}

const onnx::Tensor& add_float_initializer(onnx::Model& model, const std::string& name,
                                          std::vector<int64_t> dims, const std::vector<float>& values) {
  for (const onnx::Tensor& t : model.graph.initializers)
    if (t.name == name) return t;
  std::vector<uint8_t>& bytes = model.owned.emplace_back(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  onnx::Tensor t;
  t.name = name;
  t.dtype = onnx::DataType::kFloat;
  t.dims = std::move(dims);
  t.bytes = std::span<const uint8_t>(bytes.data(), bytes.size());
  model.graph.initializers.push_back(std::move(t));
  return model.graph.initializers.back();
}

void add_int64_initializer(onnx::Model& model, const std::string& name, const std::vector<int64_t>& values) {
  for (const onnx::Tensor& t : model.graph.initializers)
    if (t.name == name) return;
  std::vector<uint8_t>& bytes = model.owned.emplace_back(values.size() * sizeof(int64_t));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  onnx::Tensor t;
  t.name = name;
  t.dtype = onnx::DataType::kInt64;
  t.dims = {static_cast<int64_t>(values.size())};
  t.bytes = std::span<const uint8_t>(bytes.data(), bytes.size());
  model.graph.initializers.push_back(std::move(t));
}

struct Layer {
  onnx::Node gqa;
  size_t out_reshape = 0, concat_k = 0, concat_v = 0;
  std::string past_k, past_v, present_k, present_v;
  std::optional<std::pair<std::string, std::string>> flatten_q, flatten_k;  // (from, to)
  std::vector<Head> normed;  // heads with a per-head norm (Qwen3)
};

// Bytes of a tensor, concatenated: q, k, v weights / scales / biases of one layer.
const onnx::Tensor& add_concat_initializer(onnx::Model& model, const std::string& name,
                                           const std::vector<const onnx::Tensor*>& parts,
                                           std::vector<int64_t> dims) {
  size_t n = 0;
  for (const onnx::Tensor* t : parts) n += t->bytes.size();
  std::vector<uint8_t>& bytes = model.owned.emplace_back(n);
  size_t at = 0;
  for (const onnx::Tensor* t : parts) {
    std::memcpy(bytes.data() + at, t->bytes.data(), t->bytes.size());
    at += t->bytes.size();
  }
  onnx::Tensor t;
  t.name = name;
  t.dtype = parts[0]->dtype;
  t.dims = std::move(dims);
  t.bytes = std::span<const uint8_t>(bytes.data(), bytes.size());
  model.graph.initializers.push_back(std::move(t));
  return model.graph.initializers.back();
}

// The q, k and v MatMulNBits of a fused layer (same input, K, bits, block size and
// accuracy level; constant codes and scales, no zero points or g_idx; biases on all or
// none) become one MatMulNBits over the rows concatenated along N, and GroupQueryAttention
// reads it packed, as the builder's layout: one GEMV a layer instead of three. Each output
// column is the same dot product as before. Returns the number of layers packed.
int pack_qkv(std::vector<onnx::Node>& nodes, onnx::Model& model) {
  onnx::Graph& g = model.graph;
  const Index ix = index_of(nodes, g);
  const Matcher m(nodes, ix, g);
  struct Pack {
    size_t gqa;
    std::array<size_t, 3> mm;
  };
  std::vector<Pack> packs;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const onnx::Node& n = nodes[i];
    if (n.op_type != "GroupQueryAttention" || n.domain != "com.microsoft" || !n.has_input(1) ||
        !n.has_input(2))
      continue;
    std::array<size_t, 3> mm{};
    bool ok = true;
    for (int j = 0; j < 3 && ok; ++j) {
      const onnx::Node* p = m.any_prod(n.inputs[j]);
      ok = p != nullptr && p->op_type == "MatMulNBits" && p->domain == "com.microsoft" &&
           p->outputs.size() == 1 && m.uses(n.inputs[j]) == 1 && !p->has_input(3) && !p->has_input(4) &&
           p->inputs.size() <= 6 && g.initializer(p->inputs[1]) != nullptr &&
           g.initializer(p->inputs[2]) != nullptr &&
           (!p->has_input(5) || g.initializer(p->inputs[5]) != nullptr);
      if (ok) mm[j] = m.index(n.inputs[j]);
    }
    if (!ok) continue;
    const onnx::Node& q = nodes[mm[0]];
    for (int j = 1; j < 3 && ok; ++j) {
      const onnx::Node& o = nodes[mm[j]];
      ok = o.inputs[0] == q.inputs[0] && o.has_input(5) == q.has_input(5);
      for (const char* a : {"K", "bits", "block_size", "accuracy_level"})
        ok = ok && o.attr_int(a, -1) == q.attr_int(a, -1);
      const onnx::Tensor* b0 = g.initializer(q.inputs[1]);
      const onnx::Tensor* b1 = g.initializer(o.inputs[1]);
      const onnx::Tensor* s0 = g.initializer(q.inputs[2]);
      const onnx::Tensor* s1 = g.initializer(o.inputs[2]);
      ok = ok && b0->dtype == b1->dtype && b0->dims.size() == 3 && b1->dims.size() == 3 &&
           b0->dims[1] == b1->dims[1] && b0->dims[2] == b1->dims[2] && s0->dtype == s1->dtype;
      if (ok && q.has_input(5)) ok = g.initializer(q.inputs[5])->dtype == g.initializer(o.inputs[5])->dtype;
    }
    for (int j = 0; j < 3 && ok; ++j) {
      const onnx::Node& o = nodes[mm[j]];
      const onnx::Tensor* b = g.initializer(o.inputs[1]);
      const onnx::Tensor* sc = g.initializer(o.inputs[2]);
      ok = b->dims[0] == o.attr_int("N", -1) && sc->numel() == b->dims[0] * b->dims[1] &&
           (!o.has_input(5) || g.initializer(o.inputs[5])->numel() == b->dims[0]);
    }
    if (ok) packs.push_back({i, mm});
  }
  if (packs.empty()) return 0;
  const std::vector<onnx::Node> before = nodes;
  for (const Pack& p : packs) {
    const onnx::Node& q = nodes[p.mm[0]];
    std::vector<const onnx::Tensor*> bs, ss, bias;
    int64_t n_total = 0;
    for (size_t j : p.mm)
      for (size_t i : {1, 2, 5})
        if (nodes[j].has_input(i)) model.materialize(nodes[j].inputs[i]);
    for (size_t j : p.mm) {
      bs.push_back(g.initializer(nodes[j].inputs[1]));
      ss.push_back(g.initializer(nodes[j].inputs[2]));
      if (q.has_input(5)) bias.push_back(g.initializer(nodes[j].inputs[5]));
      n_total += bs.back()->dims[0];
    }
    const std::string base = q.outputs[0] + "/nbits_qkv";
    const int64_t kb = bs[0]->dims[1], blob = bs[0]->dims[2];
    // Pointers into g.initializers stay valid: each is copied before the next push_back.
    const std::string bname = base + "/B", sname = base + "/scales", biname = base + "/bias";
    add_concat_initializer(model, bname, bs, {n_total, kb, blob});
    ss = {g.initializer(nodes[p.mm[0]].inputs[2]), g.initializer(nodes[p.mm[1]].inputs[2]),
          g.initializer(nodes[p.mm[2]].inputs[2])};
    add_concat_initializer(model, sname, ss, {n_total * kb});
    onnx::Node packed;
    packed.name = base;
    packed.op_type = "MatMulNBits";
    packed.domain = "com.microsoft";
    packed.inputs = {q.inputs[0], bname, sname};
    if (q.has_input(5)) {
      bias = {g.initializer(nodes[p.mm[0]].inputs[5]), g.initializer(nodes[p.mm[1]].inputs[5]),
              g.initializer(nodes[p.mm[2]].inputs[5])};
      add_concat_initializer(model, biname, bias, {n_total});
      packed.inputs.insert(packed.inputs.end(), {"", "", biname});
    }
    packed.outputs = {base};
    packed.attributes = q.attributes;
    for (onnx::Attribute& a : packed.attributes)
      if (a.name == "N") a.i = n_total;
    onnx::Node& gqa = nodes[p.gqa];
    gqa.inputs[0] = base;
    gqa.inputs[1] = gqa.inputs[2] = "";
    nodes.push_back(std::move(packed));
  }
  try {
    nodes = sort_nodes(std::move(nodes), g);
  } catch (const Error&) {  // not expected: keep the unpacked layers
    nodes = before;
    return 0;
  }
  remove_dead(nodes, g);
  return static_cast<int>(packs.size());
}

}  // namespace

int fuse_optimum_attention(std::vector<onnx::Node>& nodes, onnx::Model& model, int64_t max_positions) {
  NBITS_CHECK(max_positions > 0, "rotary tables need a positive number of positions, got ", max_positions);
  onnx::Graph& g = model.graph;
  // The cos/sin tables of the i-th distinct rotary: nbits/optimum/cos_cache, cos_cache_1, ...
  auto rope_table = [](const char* which, size_t i) {
    return std::string("nbits/optimum/") + which + "_cache" + (i == 0 ? "" : "_" + std::to_string(i));
  };
  const Index ix = index_of(nodes, g);
  const Matcher m(nodes, ix, g);
  static constexpr const char* kSeqlens = "nbits/optimum/seqlens_k";
  static constexpr const char* kTotal = "nbits/optimum/total_sequence_length";
  std::vector<Layer> layers;
  std::string mask_input;
  std::vector<Rope> ropes;
  auto width = [](const Rope& r) { return static_cast<int64_t>(2 * r.inv_freq.size()); };  // the tables'
  for (size_t si = 0; si < nodes.size(); ++si) {
    const onnx::Node& sm = nodes[si];
    if (!is_onnx_op(sm, "Softmax") || sm.outputs.size() != 1) continue;
    const int64_t axis = sm.attr_int("axis", -1);
    if (axis != -1 && axis != 3) continue;
    // Scores = Add(MatMul(A, Bt) [* or / c], mask).
    const onnx::Node* add = m.prod(sm.inputs[0], "Add");
    if (add == nullptr || add->inputs.size() != 2) continue;
    const onnx::Node* qk = nullptr;
    std::string mask;
    float scale = 1.0f, softcap = 0.0f;
    for (int i = 0; i < 2 && qk == nullptr; ++i) {
      std::string v = add->inputs[i];
      float s = 1.0f;
      // Gemma-2's attention logit softcapping before the mask: Mul(Tanh(Div(x, c)), c) -> x.
      const float cap = trace_softcap(m, &v);
      if (const onnx::Node* d = m.prod(v, "Div"); d != nullptr && m.scalar(d->inputs[1])) {
        s = 1.0f / *m.scalar(d->inputs[1]);
        v = d->inputs[0];
      } else if (const onnx::Node* mu = m.prod(v, "Mul"); mu != nullptr && mu->inputs.size() == 2) {
        const int c = m.scalar(mu->inputs[1]) ? 1 : m.scalar(mu->inputs[0]) ? 0 : -1;
        if (c >= 0) {
          s = *m.scalar(mu->inputs[c]);
          v = mu->inputs[1 - c];
        }
      }
      if (const onnx::Node* mm = m.prod(v, "MatMul")) {
        qk = mm;
        scale = s;
        softcap = cap;
        mask = add->inputs[1 - i];
      }
    }
    if (qk == nullptr) continue;
    auto unscale = [&](std::string v) {
      if (const onnx::Node* mu = m.prod(v, "Mul"); mu != nullptr && mu->inputs.size() == 2) {
        const int c = m.scalar(mu->inputs[1]) ? 1 : m.scalar(mu->inputs[0]) ? 0 : -1;
        if (c >= 0) {
          scale *= *m.scalar(mu->inputs[c]);
          return mu->inputs[1 - c];
        }
      }
      return v;
    };
    const std::string q_rot = unscale(qk->inputs[0]);
    const onnx::Node* kt = m.prod(unscale(qk->inputs[1]), "Transpose");
    if (!has_perm(kt, {0, 1, 3, 2})) continue;
    const auto ks = trace_present(m, skip_repeat_kv(m, kt->inputs[0]));
    if (!ks) continue;
    // Probabilities [-> Where(IsNaN(p), 0, p)] [-> Cast(float): eager attention's
    // softmax(dtype=float32).to(dtype)] @ V -> Transpose(0213) -> Reshape.
    std::string p = sm.outputs[0];
    const onnx::Node* pv = nullptr;
    for (size_t j = 0; j < nodes.size() && pv == nullptr; ++j) {
      const onnx::Node& n = nodes[j];
      if (is_onnx_op(n, "MatMul") && n.inputs.size() == 2 && n.inputs[0] == p) pv = &n;
      if ((is_onnx_op(n, "Where") && n.inputs.size() == 3 && n.inputs[2] == p &&
           m.prod(n.inputs[0], "IsNaN")) ||
          (is_onnx_op(n, "Cast") && float_cast(n) && n.inputs[0] == p && only_use(m, p))) {
        p = n.outputs[0];
        j = 0;
      }
    }
    if (pv == nullptr) continue;
    const auto vs = trace_present(m, skip_repeat_kv(m, pv->inputs[1]));
    if (!vs) continue;
    const onnx::Node* ot = nullptr;
    const onnx::Node* orr = nullptr;
    for (const onnx::Node& n : nodes)
      if (is_onnx_op(n, "Transpose") && n.inputs[0] == pv->outputs[0] && has_perm(&n, {0, 2, 1, 3})) ot = &n;
    if (ot != nullptr)
      for (const onnx::Node& n : nodes)
        if (is_onnx_op(n, "Reshape") && n.inputs[0] == ot->outputs[0]) orr = &n;
    if (orr == nullptr) continue;
    // Rotary on q and k, sharing cos/sin.
    const onnx::Node* qadd = m.prod(q_rot, "Add");
    std::optional<Rope> r;
    std::vector<size_t> chain;
    std::optional<std::string> q_x, k_x;
    bool q_partial = false, k_partial = false;
    // Partial rotary: Concat(rotated, passed) in front of the Add.
    if (const onnx::Node* cat = m.prod(q_rot, "Concat"); cat != nullptr && cat->inputs.size() == 2)
      qadd = m.prod(cat->inputs[0], "Add");
    if (qadd != nullptr && qadd->inputs.size() == 2)
      for (int order = 0; order < 2 && !r; ++order) {
        const onnx::Node* mc = m.prod(qadd->inputs[order], "Mul");
        const onnx::Node* ms = m.prod(qadd->inputs[1 - order], "Mul");
        if (mc == nullptr || ms == nullptr || mc->inputs.size() != 2 || ms->inputs.size() != 2) continue;
        for (int i = 0; i < 2 && !r; ++i)
          for (int j = 0; j < 2 && !r; ++j) {
            r = trace_rope(m, mc->inputs[i], ms->inputs[j]);
            if (r) q_x = trace_rotary(m, q_rot, r->cos4, r->sin4, width(*r), chain, &q_partial);
            if (!q_x) r.reset();
          }
      }
    if (r && q_x) {
      k_x = trace_rotary(m, ks->fresh_rotated, r->cos4, r->sin4, width(*r), chain, &k_partial);
      if (!k_x || k_partial != q_partial) continue;
    } else {
      // No rotary on this layer (SmolLM3's NoPE layers): q and k are the heads themselves, which
      // trace_head below requires (Transpose(Reshape(projection))): a rotary in a form not
      // matched above leaves an Add or Concat there and the layer is not fused.
      r.reset();
      q_x = q_rot;
      k_x = ks->fresh_rotated;
    }
    const auto qh = trace_head(m, *q_x);
    const auto kh = trace_head(m, *k_x);
    const auto vh = trace_head(m, vs->fresh_rotated);
    if (!qh || !kh || !vh || vh->per_head.size() != 0) continue;
    const int64_t D = qh->head_dim;
    if (kh->head_dim != D || vh->head_dim != D || kh->heads != vh->heads || qh->heads % kh->heads != 0 ||
        (r && (q_partial ? static_cast<int64_t>(r->inv_freq.size()) * 2 > D
                         : static_cast<int64_t>(r->inv_freq.size()) * 2 != D)))
      continue;
    // Each distinct rotary (Gemma-3: rope_local_base_freq on sliding layers, rope_theta on the
    // others) gets its own cos/sin tables.
    size_t rope_index = ropes.size();
    if (r)
      for (size_t i = 0; i < ropes.size(); ++i)
        if (ropes[i].inv_freq == r->inv_freq && ropes[i].cos_scale == r->cos_scale &&
            ropes[i].sin_scale == r->sin_scale)
          rope_index = i;
    int64_t window = -1;
    const auto src = causal_mask_source(m, g, mask, &window);
    if (!src || (!mask_input.empty() && *src != mask_input)) continue;
    mask_input = *src;
    if (r && rope_index == ropes.size()) ropes.push_back(*r);

    Layer l;
    l.out_reshape = m.index(orr->outputs[0]);
    l.concat_k = ks->concat;
    l.concat_v = vs->concat;
    l.past_k = ks->past;
    l.past_v = vs->past;
    l.present_k = ks->present;
    l.present_v = vs->present;
    std::string q_in = qh->flat, k_in = kh->flat;
    if (!qh->per_head.empty()) {
      q_in = qh->per_head + "/nbits_flat";
      l.flatten_q = std::make_pair(qh->per_head, q_in);
    }
    if (!kh->per_head.empty()) {
      k_in = kh->per_head + "/nbits_flat";
      l.flatten_k = std::make_pair(kh->per_head, k_in);
    }
    for (const auto& h : {qh, kh})
      if (!h->per_head.empty()) l.normed.push_back(*h);
    l.gqa.name = orr->name + "/GroupQueryAttention";
    l.gqa.op_type = "GroupQueryAttention";
    l.gqa.domain = "com.microsoft";
    l.gqa.inputs = {q_in, k_in, vh->flat, ks->past, vs->past, kSeqlens, kTotal};
    if (r)
      l.gqa.inputs.insert(l.gqa.inputs.end(), {rope_table("cos", rope_index), rope_table("sin", rope_index)});
    l.gqa.outputs = {orr->outputs[0], ks->present, vs->present};
    l.gqa.attributes = {int_attribute("num_heads", qh->heads), int_attribute("kv_num_heads", kh->heads),
                        float_attribute("scale", scale), int_attribute("do_rotary", r ? 1 : 0),
                        int_attribute("rotary_interleaved", 0)};
    if (window > 0) l.gqa.attributes.push_back(int_attribute("local_window_size", window));
    if (softcap > 0) l.gqa.attributes.push_back(float_attribute("softcap", softcap));
    layers.push_back(std::move(l));
  }
  if (layers.empty()) return 0;
  // All layers or none: the Generator shares past/present buffers for every layer or none.
  size_t concat_presents = 0;
  for (const onnx::ValueInfo& o : g.outputs) concat_presents += trace_present(m, o.name).has_value();
  if (concat_presents != 2 * layers.size()) return 0;

  const std::vector<onnx::Node> original = nodes;
  std::vector<bool> removed(nodes.size(), false);
  std::vector<onnx::Node> added;
  std::set<int64_t> head_dims;
  for (Layer& l : layers) {
    removed[l.out_reshape] = removed[l.concat_k] = removed[l.concat_v] = true;
    // Per-head norms: [B,S,N*D] -> [B,S,N,D] by a constant shape (its shape subgraph goes
    // dead) and the norm reads it without the Cast(float) in between.
    for (const Head& h : l.normed) {
      const std::string shape = "nbits/optimum/head_shape_" + std::to_string(h.head_dim);
      head_dims.insert(h.head_dim);
      nodes[h.reshape].inputs[1] = shape;
      nodes[h.norm].inputs[0] = h.reshaped;
    }
    for (const auto& f : {l.flatten_q, l.flatten_k})
      if (f) {
        onnx::Node rs;
        rs.name = "<Reshape -> " + f->second + ">";
        rs.op_type = "Reshape";
        rs.inputs = {f->first, "nbits/optimum/flat_shape"};
        rs.outputs = {f->second};
        added.push_back(std::move(rs));
      }
    added.push_back(std::move(l.gqa));
  }
  erase_removed(nodes, removed);
  onnx::Node lengths;
  lengths.name = "<AttentionMaskLengths>";
  lengths.op_type = "AttentionMaskLengths";
  lengths.domain = kInternalDomain;
  lengths.inputs = {mask_input};
  lengths.outputs = {kSeqlens, kTotal};
  nodes.push_back(std::move(lengths));
  for (onnx::Node& n : added) nodes.push_back(std::move(n));
  try {
    std::vector<std::string> extra{"nbits/optimum/flat_shape"};
    for (size_t i = 0; i < ropes.size(); ++i)
      extra.insert(extra.end(), {rope_table("cos", i), rope_table("sin", i)});
    for (int64_t d : head_dims) extra.push_back("nbits/optimum/head_shape_" + std::to_string(d));
    nodes = sort_nodes(std::move(nodes), g, extra);
  } catch (const Error&) {
    nodes = original;
    return 0;
  }
  remove_dead(nodes, g);
  std::map<std::string, int> reads;
  for (const onnx::Node& n : nodes)
    for (const std::string& in : n.inputs) ++reads[in];
  for (const Layer& l : layers)
    if (reads[l.present_k] != 0 || reads[l.present_v] != 0 || reads[l.past_k] != 1 || reads[l.past_v] != 1) {
      nodes = original;
      return 0;
    }
  // Tables of max_positions rows, as the layers computed them: cos(p * inv_freq) * scaling.
  for (size_t r = 0; r < ropes.size(); ++r) {
    const Rope& rope = ropes[r];
    const int64_t half = static_cast<int64_t>(rope.inv_freq.size());
    std::vector<float> cos_t(max_positions * half), sin_t(max_positions * half);
    for (int64_t p = 0; p < max_positions; ++p)
      for (int64_t i = 0; i < half; ++i) {
        const float f = static_cast<float>(p) * rope.inv_freq[i];
        cos_t[p * half + i] = std::cos(f) * rope.cos_scale;
        sin_t[p * half + i] = std::sin(f) * rope.sin_scale;
      }
    add_float_initializer(model, rope_table("cos", r), {max_positions, half}, cos_t);
    add_float_initializer(model, rope_table("sin", r), {max_positions, half}, sin_t);
  }
  add_int64_initializer(model, "nbits/optimum/flat_shape", {0, 0, -1});
  for (int64_t d : head_dims)
    add_int64_initializer(model, "nbits/optimum/head_shape_" + std::to_string(d), {0, 0, -1, d});
  pack_qkv(nodes, model);
  return static_cast<int>(layers.size());
}

}  // namespace nbits::graph

namespace nbits::graph {
namespace {

// The value of a one-element integer computable at load: a constant, or shape arithmetic
// (Add/Sub/Mul/Div, Unsqueeze/Squeeze/Identity, integer Casts) over Gather(Shape(of), -1) = n.
std::optional<int64_t> static_int(const Matcher& m, const std::string& v, const std::string& of, int64_t n,
                                  int depth = 0) {
  if (depth > 16) return std::nullopt;
  if (const auto c = m.ints(v)) return c->size() == 1 ? std::optional<int64_t>((*c)[0]) : std::nullopt;
  const onnx::Node* p = m.any_prod(v);
  if (p == nullptr || (!p->domain.empty() && p->domain != "ai.onnx") || p->inputs.empty())
    return std::nullopt;
  auto in = [&](size_t i) {
    return i < p->inputs.size() ? static_int(m, p->inputs[i], of, n, depth + 1) : std::nullopt;
  };
  const std::string& t = p->op_type;
  if (t == "Unsqueeze" || t == "Squeeze" || t == "Identity" || (t == "Concat" && p->inputs.size() == 1))
    return in(0);
  if (t == "Cast") {
    const int64_t to = p->attr_int("to", 0);
    if (to != static_cast<int64_t>(onnx::DataType::kInt64) &&
        to != static_cast<int64_t>(onnx::DataType::kInt32))
      return std::nullopt;
    return in(0);
  }
  if (t == "Gather") {
    const onnx::Node* sh = m.prod(p->inputs[0], "Shape");
    const auto idx = p->has_input(1) ? m.ints(p->inputs[1]) : std::nullopt;
    if (sh != nullptr && sh->inputs.size() == 1 && sh->inputs[0] == of && sh->attr("start") == nullptr &&
        sh->attr("end") == nullptr && idx && *idx == std::vector<int64_t>{-1})
      return n;
    return std::nullopt;
  }
  if (t != "Add" && t != "Sub" && t != "Mul" && t != "Div") return std::nullopt;
  const auto a = in(0), b = in(1);
  if (!a || !b) return std::nullopt;
  if (t == "Add") return *a + *b;
  if (t == "Sub") return *a - *b;
  if (t == "Mul") return *a * *b;
  if (*b <= 0 || *a < 0) return std::nullopt;  // ONNX integer Div truncates; only the plain case
  return *a / *b;
}

// The [start, end) one Slice of a projection output [B, S, N] takes along its last axis (axes
// -1 or 2, step 1), clamped as ONNX does; nullopt when not computable at load.
std::optional<std::pair<int64_t, int64_t>> last_axis_window(const Matcher& m, const onnx::Node& s,
                                                            int64_t n) {
  if (!s.has_input(1) || !s.has_input(2) || !s.has_input(3)) return std::nullopt;
  const auto axes = m.ints(s.inputs[3]);
  if (!axes || !(*axes == std::vector<int64_t>{-1} || *axes == std::vector<int64_t>{2})) return std::nullopt;
  if (s.has_input(4) && m.ints(s.inputs[4]) != std::vector<int64_t>{1}) return std::nullopt;
  auto st = static_int(m, s.inputs[1], s.inputs[0], n);
  auto en = static_int(m, s.inputs[2], s.inputs[0], n);
  if (!st || !en) return std::nullopt;
  auto clamp = [n](int64_t x) { return std::clamp(x < 0 ? x + n : x, int64_t{0}, n); };
  return std::make_pair(clamp(*st), clamp(*en));
}

std::vector<uint8_t> bytes_of(std::span<const uint8_t> all, size_t at, size_t n) {
  return std::vector<uint8_t>(all.begin() + static_cast<std::ptrdiff_t>(at),
                              all.begin() + static_cast<std::ptrdiff_t>(at + n));
}

// Columns [begin, begin + cols) of a 2-D [R, N] tensor of whole-byte elements, as bytes.
std::vector<uint8_t> columns_of(const onnx::Tensor& t, int64_t begin, int64_t cols) {
  const int64_t R = t.dims[0], N = t.dims[1];
  const size_t esz = t.bytes.size() / static_cast<size_t>(t.numel());
  std::vector<uint8_t> out(static_cast<size_t>(R * cols) * esz);
  for (int64_t r = 0; r < R; ++r)
    std::memcpy(out.data() + static_cast<size_t>(r * cols) * esz,
                t.bytes.data() + static_cast<size_t>(r * N + begin) * esz, static_cast<size_t>(cols) * esz);
  return out;
}

// A 2-D tensor of whole-byte elements with N columns.
bool columns_split(const onnx::Tensor* t, int64_t n) {
  return t != nullptr && t->dims.size() == 2 && t->dims[1] == n && t->numel() > 0 &&
         onnx::data_type_bits(t->dtype) > 0 && onnx::data_type_bits(t->dtype) % 8 == 0;
}

}  // namespace

int split_sliced_projections(std::vector<onnx::Node>& nodes, onnx::Model& model) {
  onnx::Graph& g = model.graph;
  const std::vector<onnx::Node> original = nodes;
  std::map<std::string, std::vector<size_t>> readers;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const std::string& in : nodes[i].inputs) readers[in].push_back(i);
  struct Part {
    size_t slice;
    int64_t begin, end;
  };
  struct Split {
    size_t proj;
    std::vector<Part> parts;
  };
  std::vector<Split> splits;
  {
    const Index ix = index_of(nodes, g);
    const Matcher m(nodes, ix, g);
    for (size_t pi = 0; pi < nodes.size(); ++pi) {
      const onnx::Node& p = nodes[pi];
      if (p.outputs.size() != 1 || p.inputs.size() < 2) continue;
      int64_t n = -1;
      const onnx::Tensor* b = g.initializer(p.inputs[1]);
      if (b == nullptr) continue;
      if (p.op_type == "MatMulNBits" && p.domain == "com.microsoft") {
        const onnx::Tensor* sc = p.has_input(2) ? g.initializer(p.inputs[2]) : nullptr;
        n = p.attr_int("N", -1);
        const bool bias_ok = !p.has_input(5) || g.initializer(p.inputs[5]) != nullptr;
        if (sc == nullptr || p.has_input(3) || p.has_input(4) || p.inputs.size() > 6 || !bias_ok ||
            b->dims.size() != 3 || b->dims[0] != n || sc->numel() != n * b->dims[1])
          continue;
      } else if (is_onnx_op(p, "MatMul") && p.inputs.size() == 2 && b->dims.size() == 2) {
        n = b->dims[1];
      } else if (p.op_type == kMatMulDequantizedOp && p.domain == kInternalDomain && b->dims.size() == 2 &&
                 (b->dtype == onnx::DataType::kInt8 || b->dtype == onnx::DataType::kUint8) &&
                 (p.inputs.size() == 3 || p.inputs.size() == 4)) {
        // The int8 rewrites' (fuse_dynamic_quantize_matmul, fuse_dequantize_matmul) W [K, N],
        // scale and zero point [K / block, N]: all split by columns.
        n = b->dims[1];
        bool ok = true;
        for (size_t i = 2; i < p.inputs.size(); ++i) ok = ok && columns_split(g.initializer(p.inputs[i]), n);
        if (!ok) continue;
      } else {
        continue;
      }
      const std::string& y = p.outputs[0];
      if (m.graph_output(y)) continue;
      Split sp{pi, {}};
      bool ok = true;
      for (size_t r : readers[y]) {
        const onnx::Node& s = nodes[r];
        if (is_onnx_op(s, "Shape")) continue;  // the slices' own shape arithmetic (checked dead below)
        const auto w = is_onnx_op(s, "Slice") && s.inputs[0] == y && s.outputs.size() == 1
                           ? last_axis_window(m, s, n)
                           : std::nullopt;
        if (!w || w->first >= w->second) {
          ok = false;
          break;
        }
        sp.parts.push_back({r, w->first, w->second});
      }
      std::sort(sp.parts.begin(), sp.parts.end(),
                [](const Part& l, const Part& r) { return l.begin < r.begin; });
      int64_t at = 0;
      for (const Part& pt : sp.parts) {
        ok = ok && pt.begin == at;
        at = pt.end;
      }
      if (ok && at == n && sp.parts.size() >= 2) splits.push_back(std::move(sp));
    }
  }
  if (splits.empty()) return 0;
  std::vector<bool> removed(nodes.size(), false);
  std::map<size_t, std::vector<onnx::Node>> parts_at;  // in place of the projection: before every reader
  std::set<std::string> gone;
  for (const Split& sp : splits) {
    const onnx::Node p = nodes[sp.proj];
    removed[sp.proj] = true;
    gone.insert(p.outputs[0]);
    const bool nbits = p.op_type == "MatMulNBits";
    for (size_t i = 0; i < sp.parts.size(); ++i) {
      const Part& pt = sp.parts[i];
      removed[pt.slice] = true;
      const int64_t cols = pt.end - pt.begin;
      const std::string base = p.outputs[0] + "/nbits_part" + std::to_string(i);
      onnx::Node q = p;
      q.name = base;
      q.outputs = {nodes[pt.slice].outputs[0]};
      // Copies of the bytes first: adding an initializer may move the others.
      for (size_t in = 1; in < p.inputs.size(); ++in)
        if (p.has_input(in)) model.materialize(p.inputs[in]);
      const onnx::Tensor& b = *g.initializer(p.inputs[1]);
      if (nbits) {
        const onnx::Tensor& sc = *g.initializer(p.inputs[2]);
        const int64_t kb = b.dims[1], blob = b.dims[2];
        const size_t ssz = sc.bytes.size() / static_cast<size_t>(sc.numel());
        auto bb = bytes_of(b.bytes, static_cast<size_t>(pt.begin * kb * blob),
                           static_cast<size_t>(cols * kb * blob));
        auto sb = bytes_of(sc.bytes, static_cast<size_t>(pt.begin * kb) * ssz,
                           static_cast<size_t>(cols * kb) * ssz);
        std::vector<uint8_t> biasb;
        onnx::DataType bias_t = onnx::DataType::kFloat;
        if (p.has_input(5)) {
          const onnx::Tensor& bi = *g.initializer(p.inputs[5]);
          const size_t esz = bi.bytes.size() / static_cast<size_t>(bi.numel());
          biasb = bytes_of(bi.bytes, static_cast<size_t>(pt.begin) * esz, static_cast<size_t>(cols) * esz);
          bias_t = bi.dtype;
        }
        const onnx::DataType bt = b.dtype, st = sc.dtype;
        std::vector<int64_t> sdims =
            sc.dims.size() == 2 ? std::vector<int64_t>{cols, kb} : std::vector<int64_t>{cols * kb};
        add_initializer(model, base + "/B", bt, {cols, kb, blob}, bb.data(), bb.size());
        add_initializer(model, base + "/scales", st, std::move(sdims), sb.data(), sb.size());
        q.inputs[1] = base + "/B";
        q.inputs[2] = base + "/scales";
        if (p.has_input(5)) {
          add_initializer(model, base + "/bias", bias_t, {cols}, biasb.data(), biasb.size());
          q.inputs[5] = base + "/bias";
        }
        for (onnx::Attribute& a : q.attributes)
          if (a.name == "N") a.i = cols;
      } else {  // MatMul B [K, N] (MatMulDequantized: and its scale, zero point): columns [begin, end)
        static constexpr const char* kSuffix[] = {"", "/B", "/scale", "/zero_point"};
        for (size_t in = 1; in < p.inputs.size(); ++in) {
          const onnx::Tensor& t = *g.initializer(p.inputs[in]);
          const auto cb = columns_of(t, pt.begin, cols);
          const onnx::DataType dt = t.dtype;
          const int64_t rows = t.dims[0];
          q.inputs[in] = base + kSuffix[in];
          add_initializer(model, q.inputs[in], dt, {rows, cols}, cb.data(), cb.size());
        }
      }
      parts_at[sp.proj].push_back(std::move(q));
    }
  }
  std::vector<onnx::Node> out;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (const auto it = parts_at.find(i); it != parts_at.end())
      for (onnx::Node& q : it->second) out.push_back(std::move(q));
    if (!removed[i]) out.push_back(std::move(nodes[i]));
  }
  nodes = std::move(out);
  remove_dead(nodes, g);  // the slices' bounds arithmetic (Shape of the whole projection)
  for (const onnx::Node& n : nodes)
    for (const std::string& in : n.inputs)
      if (gone.count(in) != 0) {  // read otherwise than by its slices: not split
        nodes = original;
        return 0;
      }
  return static_cast<int>(splits.size());
}

}  // namespace nbits::graph

namespace nbits::graph {

int fuse_gelu_tanh(std::vector<onnx::Node>& nodes, const onnx::Graph& g) {
  const Index ix = index_of(nodes, g);
  const Matcher m(nodes, ix, g);
  const Readers rd(nodes, m);
  std::vector<bool> removed(nodes.size(), false);
  auto near = [](std::optional<float> v, double want, double rel) {
    return v.has_value() && std::abs(*v - want) <= rel * std::abs(want);
  };
  // Mul(c, v) or Mul(v, c) with c a scalar near `want`: v; "" otherwise.
  auto scaled = [&](const onnx::Node* n, double want, double rel) -> std::string {
    if (n == nullptr || !is_onnx_op(*n, "Mul") || n->inputs.size() != 2) return "";
    for (int i = 0; i < 2; ++i)
      if (near(m.scalar(n->inputs[i]), want, rel)) return n->inputs[1 - i];
    return "";
  };
  int fused = 0;
  for (size_t ti = 0; ti < nodes.size(); ++ti) {
    const onnx::Node& tanh = nodes[ti];
    if (!is_onnx_op(tanh, "Tanh") || tanh.inputs.size() != 1 || tanh.outputs.size() != 1) continue;
    // u = sqrt(2/pi) * (x + 0.044715 * x^3), x^3 = Mul(x, Mul(x, x)) (either order) or Pow(x, 3).
    std::vector<size_t> chain{ti};
    const std::string a = scaled(m.any_prod(tanh.inputs[0]), 0.7978845608028654, 1e-4);
    const onnx::Node* add = a.empty() ? nullptr : m.prod(a, "Add");
    if (add == nullptr || add->inputs.size() != 2 || !only_use(m, tanh.inputs[0]) || !only_use(m, a))
      continue;
    std::string x, cube;
    for (int i = 0; i < 2 && x.empty(); ++i) {
      cube = scaled(m.any_prod(add->inputs[i]), 0.044715, 1e-3);
      if (!cube.empty() && only_use(m, add->inputs[i])) {
        x = add->inputs[1 - i];
        chain.push_back(m.index(add->inputs[i]));
      }
    }
    if (x.empty() || !only_use(m, cube)) continue;
    const onnx::Node* c = m.any_prod(cube);
    bool cube_ok = false;
    if (c != nullptr && is_onnx_op(*c, "Pow") && c->inputs.size() == 2) {
      cube_ok = c->inputs[0] == x && near(m.scalar(c->inputs[1]), 3.0, 0.0);
    } else if (c != nullptr && is_onnx_op(*c, "Mul") && c->inputs.size() == 2) {
      const std::string sq = Matcher::other(*c, x);
      const onnx::Node* s = sq.empty() ? nullptr : m.prod(sq, "Mul");
      cube_ok =
          s != nullptr && s->inputs.size() == 2 && s->inputs[0] == x && s->inputs[1] == x && only_use(m, sq);
      if (cube_ok) chain.push_back(m.index(sq));
    }
    if (!cube_ok) continue;
    chain.insert(chain.end(), {m.index(cube), m.index(a), m.index(tanh.inputs[0])});
    // y = 0.5 * (x * (1 + tanh(u))).
    const size_t pi = rd.sole(tanh.outputs[0], "Add");
    if (pi == SIZE_MAX || !near(m.scalar(Matcher::other(nodes[pi], tanh.outputs[0])), 1.0, 0.0)) continue;
    const size_t xi = rd.sole(nodes[pi].outputs[0], "Mul");
    if (xi == SIZE_MAX || Matcher::other(nodes[xi], nodes[pi].outputs[0]) != x) continue;
    const size_t hi = rd.sole(nodes[xi].outputs[0], "Mul");
    if (hi == SIZE_MAX || scaled(&nodes[hi], 0.5, 0.0) != nodes[xi].outputs[0]) continue;
    chain.insert(chain.end(), {pi, xi});
    bool taken = false;
    for (size_t i : chain) taken = taken || removed[i];
    if (taken || removed[hi]) continue;
    for (size_t i : chain) removed[i] = true;
    onnx::Node gelu;
    gelu.name = nodes[hi].name + "/FastGelu";
    gelu.op_type = "FastGelu";
    gelu.domain = "com.microsoft";
    gelu.inputs = {x};
    gelu.outputs = {nodes[hi].outputs[0]};
    nodes[hi] = std::move(gelu);
    ++fused;
  }
  erase_removed(nodes, removed);
  return fused;
}

}  // namespace nbits::graph
