// The load: the graph sorted and rewritten (graph/rewrites.h, the fusions), every node's op
// built, initializers turned into constant values (half floats widened, unaligned data
// copied), all-constant nodes folded at load, graph inputs/outputs declared; then the
// weight pages let go (session_pages.cc) and the buffers planned (session_memory.cc).
#include <cstdlib>
#include <string_view>

#include "base/fp16.h"
#include "graph/fuse_dynamic_quantize.h"
#include "graph/rewrites.h"
#include "graph/session_impl.h"
#include "ops/ops.h"

namespace nbits::graph::detail {

int SessionImpl::value_id(const std::string& name) {
  auto it = ids_.find(name);
  if (it != ids_.end()) return it->second;
  shared_->model.materialize(name);  // a GGUF tensor converted now, as its reader is built
  const onnx::Tensor* init = shared_->model.graph.initializer(name);
  NBITS_ASSERT(init != nullptr);
  return add_constant(*init);
}

int SessionImpl::add_constant(const onnx::Tensor& init) {
  const auto dt = to_dtype(init.dtype);
  NBITS_CHECK(dt.has_value(), "initializer '", init.name, "' has unsupported dtype ",
              onnx::data_type_name(init.dtype));
  Value v;
  v.name = init.name;
  v.kind = Kind::kConstant;
  v.t.dtype = *dt;
  v.t.shape = to_shape(init.dims, "initializer '" + init.name + "'");
  NBITS_CHECK(init.bytes.size() == v.t.bytes(), "initializer '", init.name, "': ", init.bytes.size(),
              " bytes for shape ", v.t.shape.str(), " of ", dtype_name(*dt));
  const void* p = init.bytes.data();
  if (compute_dtype(*dt) != *dt && keep_half_.count(init.name) == 0) {
    // fp16/bf16 weights are widened once (the session computes in fp32); the
    // file pages behind the original can go.
    const int64_t n = v.t.numel();
    auto& store = shared_->storage.emplace_back(static_cast<size_t>(n) * sizeof(float));
    auto* wide = reinterpret_cast<float*>(store.data());
    const uint8_t* half = init.bytes.data();  // may be misaligned (onnx/model.h)
    for (int64_t i = 0; i < n; ++i)
      wide[i] = *dt == DType::kF16 ? fp16_to_float(load_u16(half, i)) : bf16_to_float(load_u16(half, i));
    if (const MappedFile* f = mapping_of(init.bytes.data(), init.bytes.size())) {
      f->release(init.bytes.data(), init.bytes.size());
      released_bytes_ += init.bytes.size();
    }
    v.t.dtype = DType::kF32;
    p = store.data();
  } else if (reinterpret_cast<uintptr_t>(p) % dtype_size(*dt) != 0) {
    // Misaligned raw_data: a small one is copied now, a large one when an op that reads it
    // typed is built (align_constant); a Gather and a packing MatMul read it in place.
    if (init.bytes.size() >= onnx::Tensor::kMisalignedViewBytes) {
      v.misaligned = true;
    } else {
      auto& store = shared_->storage.emplace_back(init.bytes.begin(), init.bytes.end());
      p = store.data();
    }
  }
  v.t.data = const_cast<void*>(p);
  v.root = static_cast<int>(values_.size());
  values_.push_back(std::move(v));
  return ids_[init.name] = values_.back().root;
}

// Whether constant `t`, input `i` of `node`, may stay a misaligned view: the ops that read it
// bytewise (a Gather copies rows; a MatMul packing or re-quantizing a 2-D float B reads it by memcpy).
bool reads_misaligned(const onnx::Node& node, size_t i, const Tensor& t, const SessionOptions& options) {
  if (!node.domain.empty() && node.domain != "ai.onnx") return false;
  if (node.op_type == "Gather") return i == 0;
  // A MatMul packing (or re-quantizing) a 2-D float B reads it by memcpy (kernels::pack_float_x16).
  if (node.op_type == "MatMul")
    return i == 1 && t.shape.rank == 2 && t.numel() > 0 &&
           (options.requantize_float != 0 || ops::matmul_packs_constant_b(options, t.dtype));
  return false;
}

void SessionImpl::align_constant(int value) {
  Value& v = values_[value];
  if (!v.misaligned) return;
  const auto* p = static_cast<const uint8_t*>(v.t.data);
  auto& store = shared_->storage.emplace_back(p, p + v.t.bytes());
  v.t.data = store.data();
  v.misaligned = false;
}

void SessionImpl::build() {
  const SessionOptions& options = shared_->options;
  const onnx::Graph& g = shared_->model.graph;
  std::vector<onnx::Node> nodes = sorted_nodes(g);
  fuse_matmul_nbits_bias(nodes, g);
  fuse_dequantize_matmul(nodes, g);
  fuse_dynamic_quantize_matmul(nodes, shared_->model);
  split_sliced_projections(nodes, shared_->model);  // Phi-3's packed gate_up / qkv: before SiLU and attention
  fuse_silu_mul(nodes, g);  // after the int8 rewrites: their MatMulDequantized are projections too
  fuse_gelu_tanh(nodes, g);
  fuse_mha_into_gqa(nodes, shared_->model.graph);
  fuse_rms_norm(nodes, g);
  // NBITS_FUSE_ATTENTION=0 leaves plain-op attention on the general path, as a file no pattern
  // matches runs (tests of that path on real exports; comparisons).
  if (const char* e = std::getenv("NBITS_FUSE_ATTENTION"); e == nullptr || std::string_view(e) != "0")
    fuse_optimum_attention(nodes, shared_->model, options.max_positions > 0 ? options.max_positions : 32768);
  // After the attention fusions (which pack q/k/v themselves) and fuse_silu_mul.
  // NBITS_FUSE_MATMUL_GROUPS=0 keeps every MatMulNBits its own node (comparisons).
  if (const char* e = std::getenv("NBITS_FUSE_MATMUL_GROUPS");
      options.fuse_matmul_groups && (e == nullptr || std::string_view(e) != "0"))
    fuse_matmul_nbits_groups(nodes, g);
  if (options.kv_cache == SessionOptions::KvCache::kQ8) {
    // Only GroupQueryAttention reads int8 rows: a cache any other op reads or writes (MultiHeadAttention,
    // the plain-op general path's Concat) cannot be int8, so no q8 at all rather than part of it.
    NBITS_CHECK(set_kv_cache_dtype(nodes, shared_->model.graph, onnx::DataType::kInt8) > 0,
                "--kv-cache q8 needs a KV cache that GroupQueryAttention owns (past/present graph inputs and "
                "outputs of GroupQueryAttention nodes); this model has none (use f16 or f32)");
  } else if (options.kv_cache != SessionOptions::KvCache::kModel) {
    set_kv_cache_dtype(nodes, shared_->model.graph,
                       options.kv_cache == SessionOptions::KvCache::kF16 ? onnx::DataType::kFloat16
                                                                         : onnx::DataType::kFloat);
  }
  lower_float_boundaries(nodes, g);
  read_transposed_weights(nodes, g, options);
  keep_half_ = half_matmul_weights(nodes, g);

  values_.reserve(g.inputs.size() + g.initializers.size() + nodes.size() * 4 + 8);
  for (const onnx::Node& node : nodes)
    for (const std::string& name : node.inputs)
      if (!name.empty()) ++loads_left_[name];  // initializers, and values folded at load
  for (const onnx::ValueInfo& o : g.outputs) loads_left_.erase(o.name);  // served as outputs: keep
  for (const onnx::ValueInfo& in : g.inputs) {
    if (g.initializer(in.name) != nullptr) continue;  // IR < 4: initializers listed as inputs
    const auto dt = to_dtype(in.elem_type);
    NBITS_CHECK(dt.has_value(), "graph input '", in.name, "' has unsupported dtype ",
                onnx::data_type_name(in.elem_type));
    Value v;
    v.name = in.name;
    v.kind = Kind::kInput;
    v.t.dtype = *dt;
    v.has_declared = in.has_shape;
    for (const onnx::Dim& d : in.dims) v.declared.push_back(d.value);
    v.root = static_cast<int>(values_.size());
    ids_[in.name] = v.root;
    inputs_.push_back(v.root);
    values_.push_back(std::move(v));
  }

  size_t built = 0;
  for (const onnx::Node& node : nodes) {
    if (options.progress) options.progress(static_cast<double>(built) / static_cast<double>(nodes.size()));
    ++built;
    const OpFactory make = find_op(node.domain, node.op_type);
    NBITS_CHECK(make != nullptr, "unsupported op '", node.op_type, "' (domain '",
                node.domain.empty() ? "ai.onnx" : node.domain, "') at node '", node.name, "'");
    OpBuild b{node, {}, {}, {}, options};
    b.pool = &shared_->pool;
    b.opset = shared_->model.opset(node.domain);
    b.release_pages = [this, &node](const void* p, size_t n) {
      if (const MappedFile* f = mapping_of(p, n)) return f->release(p, n);
      if (last_reader_of_owned(node, p, n)) release_anonymous_pages(p, n);
    };
    b.mapping = [this](const void* p, size_t n) { return mapping_of(p, n); };
    std::vector<int> in(node.inputs.size(), -1);
    bool all_const = true;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (node.inputs[i].empty()) {
        b.in_types.emplace_back();
        b.constants.push_back(nullptr);
        continue;
      }
      in[i] = value_id(node.inputs[i]);
      if (!reads_misaligned(node, i, values_[in[i]].t, options)) align_constant(in[i]);
      const Value& v = values_[in[i]];
      b.in_types.emplace_back(v.t.dtype);
      b.constants.push_back(v.kind == Kind::kConstant ? &v.t : nullptr);
      all_const = all_const && v.kind == Kind::kConstant;
    }
    std::unique_ptr<Op> op = make(b);
    NBITS_ASSERT(b.out_types.size() == node.outputs.size());
    std::vector<int> out(node.outputs.size(), -1);
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i].empty()) continue;
      Value v;
      v.name = node.outputs[i];
      v.t.dtype = b.out_types[i];
      out[i] = static_cast<int>(values_.size());
      v.root = out[i];
      ids_[v.name] = out[i];
      values_.push_back(std::move(v));
    }
    if (all_const) {
      const bool view = op->alias_input() >= 0;  // the folded value is a view of an input
      fold(node, std::move(op), in, out);
      for (int i : in) consumed_at_load(i, view, view);
      continue;
    }
    for (size_t i = 0; i < in.size(); ++i)
      consumed_at_load(in[i], op->reads_constant_at_run(i), op->maps_constant_at_run(i));
    PlanNode p;
    p.name = node.name;
    p.op_type = node.op_type;
    p.op = std::move(op);
    p.in = std::move(in);
    p.out = std::move(out);
    const int index = static_cast<int>(plan_.size());
    for (int o : p.out)
      if (o >= 0) values_[o].producer = index;
    plan_.push_back(std::move(p));
  }

  for (const onnx::ValueInfo& o : g.outputs) {
    const int id = value_id(o.name);
    Value& v = values_[id];
    v.graph_output = true;
    v.has_declared = o.has_shape;
    for (const onnx::Dim& d : o.dims) v.declared.push_back(d.value);
    outputs_.push_back(id);
  }

  // Initializers made on first read that no node read (a rewrite dropped their reader) are not made.
  shared_->model.deferred.clear();

  // Pointers into values_ are stable from here on.
  link_plan();
  std::vector<bool> counted(values_.size(), false);
  for (PlanNode& p : plan_) {
    const size_t packed = p.op->packed_weight_bytes();
    weight_bytes_ += packed;
    packed_weight_bytes_ += packed;
    streamed_weight_bytes_ += p.op->streamed_weight_bytes();
    if (packed > 0) continue;
    for (int i : p.in)
      if (i >= 0 && values_[i].kind == Kind::kConstant && !counted[i]) {
        counted[i] = true;
        weight_bytes_ += values_[i].t.bytes();
      }
  }
  release_merged_ranges();
  advise_mapped_constants();
  plan_buffers();
}

void SessionImpl::fold(const onnx::Node& node, std::unique_ptr<Op> op, const std::vector<int>& in,
                       const std::vector<int>& out) {
  std::vector<const Tensor*> ins;
  std::vector<Tensor*> outs;
  for (int i : in) ins.push_back(i >= 0 ? &values_[i].t : nullptr);
  for (int o : out) outs.push_back(o >= 0 ? &values_[o].t : nullptr);
  const OpArgs args{ins.data(), ins.size(), outs.data(), outs.size()};
  op->infer(args);
  const int alias = op->alias_input();
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] < 0) continue;
    Value& v = values_[out[i]];
    v.kind = Kind::kConstant;
    if (alias >= 0 && i == 0) {
      v.t.data = ins[alias]->data;
    } else {
      auto& store = shared_->storage.emplace_back(std::max<size_t>(v.t.bytes(), 1));
      v.t.data = store.data();
    }
  }
  if (alias < 0) {
    RunContext ctx{shared_->pool};
    op->run(args, ctx);
  }
  (void)node;
}

}  // namespace nbits::graph::detail
