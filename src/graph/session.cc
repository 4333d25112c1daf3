// The session: resolves ops, folds constants, plans buffers, runs steps.
#include "graph/session.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <new>
#include <set>

#include "base/fp16.h"
#include "base/mapped_file.h"
#include "base/timer.h"
#include "graph/fuse_dynamic_quantize.h"
#include "graph/op.h"
#include "graph/rewrites.h"

namespace nbits::graph {
namespace {

enum class Kind { kInput, kConstant, kRuntime };

struct Value {
  std::string name;
  Kind kind = Kind::kRuntime;
  Tensor t;
  int producer = -1;  // plan index (runtime values)
  int root = -1;      // value owning the memory (alias views point to their root)
  int last_use = -1;  // plan index of the last reader of the root's group
  int buffer = -1;
  bool graph_output = false;
  bool bound = false;
  Tensor binding;
  std::vector<int64_t> declared;  // graph inputs/outputs: declared dims (-1 = symbolic)
  bool has_declared = false;
};

struct PlanNode {
  std::string name, op_type;
  std::shared_ptr<const Op> op;  // shared by every fork of the session
  std::vector<int> in, out;
  // Per session:
  std::vector<const Tensor*> in_ptrs;
  std::vector<Tensor*> out_ptrs;
  bool last_position = false;  // OpArgs::last_position
  int64_t calls = 0;
  double ms = 0.0;
  const char* kernel = "";  // kernel path of the last profiled run (static strings)
};

// What every session forked from one load shares, read-only once built: the
// options, the worker pool, the model (its file mappings back constants) and the
// constants folded or realigned at load.
struct Shared {
  explicit Shared(const SessionOptions& o) : options(o), pool(o.threads) {}
  SessionOptions options;
  ThreadPool pool;
  onnx::Model model;
  std::deque<std::vector<uint8_t>> storage;
};

// One reusable memory block of the arena; grows, never shrinks. The first sizing is
// exact; a later growth takes at least half again the old capacity, so a tensor that
// grows with the context (present = Concat(past, new), attention scores, masks on the
// general path) is reallocated O(log T) times over a conversation, not at every step.
struct Buffer {
  void* p = nullptr;
  size_t cap = 0;
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { release(); }
  void release() {
    if (p) ::operator delete(p, std::align_val_t(64));
    p = nullptr;
    cap = 0;
  }
  void* ensure(size_t bytes) {
    if (bytes > cap) {
      const size_t want = cap == 0 ? bytes : std::max(bytes, cap + cap / 2);
      const size_t n = std::max<size_t>(64, (want + 63) / 64 * 64);
      release();
      p = ::operator new(n, std::align_val_t(64));
      cap = n;
    }
    return p;
  }
};

class SessionImpl final : public Session {
 public:
  SessionImpl(const std::string& path, const SessionOptions& options)
      : shared_(std::make_shared<Shared>(options)) {
    shared_->model = onnx::load_model(path);
    build();
  }
  SessionImpl(onnx::Model&& model, const SessionOptions& options)
      : shared_(std::make_shared<Shared>(options)) {
    shared_->model = std::move(model);
    build();
  }

  std::unique_ptr<Session> fork() const override {
    return std::unique_ptr<Session>(new SessionImpl(*this, 0));
  }

  std::vector<std::string> input_names() const override { return names(inputs_); }
  std::vector<std::string> output_names() const override { return names(outputs_); }
  DType input_dtype(std::string_view name) const override {
    return values_[find(inputs_, name, "graph input")].t.dtype;
  }
  DType output_dtype(std::string_view name) const override {
    return values_[find(outputs_, name, "graph output")].t.dtype;
  }
  std::string output_producer(std::string_view name) const override {
    const Value& v = values_[find(outputs_, name, "graph output")];
    return v.producer >= 0 ? plan_[v.producer].op_type : "";
  }

  void bind_input(std::string_view name, const Tensor& t) override {
    Value& v = values_[find(inputs_, name, "graph input")];
    NBITS_CHECK(t.dtype == v.t.dtype, "bind_input '", v.name, "': dtype ", dtype_name(t.dtype),
                " but the graph declares ", dtype_name(v.t.dtype));
    check_declared(v, t.shape, "bind_input");
    NBITS_CHECK(t.data != nullptr || t.numel() == 0, "bind_input '", v.name, "': null data");
    v.bound = true;
    v.binding = t;
    v.t = t;
  }

  void bind_output(std::string_view name, const Tensor& t) override {
    Value& v = values_[find(outputs_, name, "graph output")];
    NBITS_CHECK(t.dtype == v.t.dtype, "bind_output '", v.name, "': dtype ", dtype_name(t.dtype),
                " but the graph produces ", dtype_name(v.t.dtype));
    NBITS_CHECK(v.kind == Kind::kRuntime, "bind_output '", v.name, "': output is not computed by a node");
    v.bound = true;
    v.binding = t;
  }

  void run() override;

  const Tensor& output(std::string_view name) const override {
    return values_[find(outputs_, name, "graph output")].t;
  }

  void set_last_position_only(std::string_view logits_name, bool on) override {
    int v = find(outputs_, logits_name, "graph output");
    while (true) {
      const Value& val = values_[v];
      NBITS_CHECK(val.kind == Kind::kRuntime && val.producer >= 0, "set_last_position_only: '", logits_name,
                  "' is not computed by a node");
      PlanNode& p = plan_[val.producer];
      const int a = p.op->alias_input();
      if (a >= 0 && p.in[a] >= 0) {
        v = p.in[a];
        continue;
      }
      NBITS_CHECK(p.op->last_position_only(), "set_last_position_only: '", logits_name,
                  "' is produced by node '", p.name, "' (", p.op_type, "), not by a MatMul or MatMulNBits");
      p.last_position = on;
      return;
    }
  }

  std::vector<MatMulNBitsInfo> matmul_nbits_info() const override {
    std::vector<MatMulNBitsInfo> r;
    for (const PlanNode& p : plan_)
      if (auto info = p.op->nbits_info()) r.push_back(*info);
    return r;
  }

  std::vector<ProfileEntry> profile() const override {
    std::vector<ProfileEntry> r;
    for (const PlanNode& p : plan_) r.push_back({p.name, p.op_type, p.kernel, p.calls, p.ms});
    return r;
  }

  void reset_profile() override {
    for (PlanNode& p : plan_) p.calls = 0, p.ms = 0.0;
  }

  size_t weight_bytes() const override { return weight_bytes_; }
  size_t packed_weight_bytes() const override { return packed_weight_bytes_; }
  size_t mapped_weight_bytes() const override { return mapped_weight_bytes_; }
  size_t released_bytes() const override { return released_bytes_; }

  size_t arena_bytes() const override {
    size_t n = 0;
    for (const auto& b : buffers_) n += b->cap;
    return n;
  }

 private:
  // A fork: the ops, constants and buffer plan of `o`, its own bindings and buffers.
  SessionImpl(const SessionImpl& o, int /*fork*/)
      : shared_(o.shared_),
        values_(o.values_),
        ids_(o.ids_),
        inputs_(o.inputs_),
        outputs_(o.outputs_),
        plan_(o.plan_),
        weight_bytes_(o.weight_bytes_),
        packed_weight_bytes_(o.packed_weight_bytes_),
        mapped_weight_bytes_(o.mapped_weight_bytes_),
        released_bytes_(o.released_bytes_) {
    for (Value& v : values_)
      if (v.kind != Kind::kConstant) {
        v.bound = false;
        v.binding = Tensor{};
        v.t.data = nullptr;
      }
    for (size_t i = 0; i < o.buffers_.size(); ++i) buffers_.push_back(std::make_unique<Buffer>());
    for (PlanNode& p : plan_) {
      p.calls = 0;
      p.ms = 0;
      p.kernel = "";
    }
    link_plan();
  }

  // Points each node's argument lists at this session's values.
  void link_plan() {
    for (PlanNode& p : plan_) {
      p.in_ptrs.clear();
      p.out_ptrs.clear();
      for (int i : p.in) p.in_ptrs.push_back(i >= 0 ? &values_[i].t : nullptr);
      for (int o : p.out) p.out_ptrs.push_back(o >= 0 ? &values_[o].t : nullptr);
    }
  }

  static std::vector<std::string> names_of(const std::vector<Value>& values, const std::vector<int>& ids) {
    std::vector<std::string> r;
    for (int i : ids) r.push_back(values[i].name);
    return r;
  }
  std::vector<std::string> names(const std::vector<int>& ids) const { return names_of(values_, ids); }

  int find(const std::vector<int>& ids, std::string_view name, const char* what) const {
    for (int i : ids)
      if (values_[i].name == name) return i;
    fail("no ", what, " named '", name, "'");
  }

  void check_declared(const Value& v, const Shape& s, const char* who) const {
    if (!v.has_declared) return;
    NBITS_CHECK(static_cast<size_t>(s.rank) == v.declared.size(), who, " '", v.name, "': rank ", s.rank, " ",
                s.str(), " but the graph declares rank ", v.declared.size());
    for (int i = 0; i < s.rank; ++i)
      NBITS_CHECK(v.declared[i] < 0 || v.declared[i] == s[i], who, " '", v.name, "': shape ", s.str(),
                  " but dim ", i, " is declared ", v.declared[i]);
  }

  int value_id(const std::string& name) {
    auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
    const onnx::Tensor* init = shared_->model.graph.initializer(name);
    NBITS_ASSERT(init != nullptr);
    return add_constant(*init);
  }

  int add_constant(const onnx::Tensor& init) {
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
      const auto* half = reinterpret_cast<const uint16_t*>(init.bytes.data());
      for (int64_t i = 0; i < n; ++i)
        wide[i] = *dt == DType::kF16 ? fp16_to_float(half[i]) : bf16_to_float(half[i]);
      if (const MappedFile* f = mapping_of(init.bytes.data(), init.bytes.size())) {
        f->release(init.bytes.data(), init.bytes.size());
        released_bytes_ += init.bytes.size();
      }
      v.t.dtype = DType::kF32;
      p = store.data();
    } else if (reinterpret_cast<uintptr_t>(p) % dtype_size(*dt) != 0) {  // unaligned raw_data: copy
      auto& store = shared_->storage.emplace_back(init.bytes.begin(), init.bytes.end());
      p = store.data();
    }
    v.t.data = const_cast<void*>(p);
    v.root = static_cast<int>(values_.size());
    values_.push_back(std::move(v));
    return ids_[init.name] = values_.back().root;
  }

  void build();
  const MappedFile* mapping_of(const void* p, size_t n) const;
  const MappedFile* mapping_of(const Tensor& t) const { return mapping_of(t.data, t.bytes()); }
  void consumed_at_load(int value, bool read_at_run);
  bool release_owned(const void* p, size_t n);
  void release_folded(int value);
  void advise_mapped_constants();
  void fold(const onnx::Node& node, std::unique_ptr<Op> op, const std::vector<int>& in,
            const std::vector<int>& out);
  void plan_buffers();

  std::shared_ptr<Shared> shared_;
  std::vector<Value> values_;
  std::map<std::string, int> ids_;
  std::vector<int> inputs_, outputs_;
  std::vector<PlanNode> plan_;
  std::vector<std::unique_ptr<Buffer>> buffers_;
  // Used while building only:
  std::map<std::string, int> loads_left_;  // constant -> node inputs not yet built
  std::set<std::string> keep_half_;        // fp16/bf16 initializers not widened (graph/rewrites.h)
  std::vector<bool> read_at_run_;          // by value id: some op reads it at run time
  struct Range {
    const MappedFile* file;
    const uint8_t* p;
    size_t n;
  };
  std::vector<Range> released_ranges_;  // initializers let go (merged at the end of load)
  void release_merged_ranges();
  size_t weight_bytes_ = 0, packed_weight_bytes_ = 0, mapped_weight_bytes_ = 0, released_bytes_ = 0;
};

const MappedFile* SessionImpl::mapping_of(const void* p, size_t n) const {
  const onnx::Model& model = shared_->model;
  if (model.file && model.file->contains(p, n)) return model.file.get();
  for (const auto& [location, f] : model.external_files)
    if (f && f->contains(p, n)) return f.get();
  return nullptr;
}

// One node input referring to initializer `value` has been built. Once every
// reader is built and none reads it at run time (they packed or folded it), the
// file pages behind it are dropped, so peak memory is the packed weights, not
// packed + original.
void SessionImpl::consumed_at_load(int value, bool read_at_run) {
  if (value < 0 || values_[value].kind != Kind::kConstant) return;
  if (read_at_run_.size() <= static_cast<size_t>(value)) read_at_run_.resize(value + 1, false);
  if (read_at_run) read_at_run_[value] = true;
  auto it = loads_left_.find(values_[value].name);
  if (it == loads_left_.end() || --it->second > 0 || read_at_run_[value]) return;
  if (shared_->model.graph.initializer(values_[value].name) == nullptr) return release_folded(value);
  const Tensor& t = values_[value].t;
  if (const MappedFile* f = mapping_of(t)) {
    f->release(t.data, t.bytes());
    released_bytes_ += t.bytes();
    released_ranges_.push_back({f, static_cast<const uint8_t*>(t.data), t.bytes()});
  } else if (release_owned(t.data, t.bytes())) {
    released_bytes_ += t.bytes();
  }
}

// A value folded at load (e.g. the Transpose of a tied embedding) whose readers are all built
// and none reads it at run (they packed it): its storage is freed unless another constant
// still alive views it.
void SessionImpl::release_folded(int value) {
  const Tensor& t = values_[value].t;
  if (t.data == nullptr || t.bytes() < (size_t{1} << 16)) return;  // small ones are not worth the scan
  for (std::vector<uint8_t>& buf : shared_->storage) {
    if (buf.data() != t.data) continue;
    const uint8_t* lo = buf.data();
    const uint8_t* hi = lo + buf.size();
    for (size_t j = 0; j < values_.size(); ++j) {
      const Value& o = values_[j];
      const auto* d = static_cast<const uint8_t*>(o.t.data);
      if (static_cast<int>(j) == value || o.kind != Kind::kConstant || d < lo || d >= hi) continue;
      const auto left = loads_left_.find(o.name);
      const bool live =
          left == loads_left_.end() || left->second > 0 || (j < read_at_run_.size() && read_at_run_[j]);
      if (live) return;
    }
    released_bytes_ += buf.size();
    std::vector<uint8_t>().swap(buf);
    return;
  }
}

// Frees a buffer of Model::owned (weights a GGUF file's repacking made, decoded typed
// fields) that holds exactly this initializer's bytes and no other initializer's: once
// packed it is not read again, and keeping it would double the peak memory.
bool SessionImpl::release_owned(const void* p, size_t n) {
  if (p == nullptr || n < (size_t{1} << 16)) return false;  // small ones are not worth the scan
  onnx::Model& model = shared_->model;
  for (std::vector<uint8_t>& buf : model.owned) {
    if (buf.data() != p || buf.size() != n) continue;
    int viewers = 0;
    for (const onnx::Tensor& init : model.graph.initializers)
      viewers += init.bytes.data() >= buf.data() && init.bytes.data() < buf.data() + buf.size();
    if (viewers != 1) return false;
    std::vector<uint8_t>().swap(buf);
    return true;
  }
  return false;
}

// Each release drops only the pages wholly inside one initializer; adjacent
// released initializers (B then scales) share boundary pages, dropped here.
void SessionImpl::release_merged_ranges() {
  std::sort(released_ranges_.begin(), released_ranges_.end(),
            [](const Range& a, const Range& b) { return a.file != b.file ? a.file < b.file : a.p < b.p; });
  for (size_t i = 0; i < released_ranges_.size();) {
    const Range& first = released_ranges_[i];
    const uint8_t* end = first.p + first.n;
    size_t j = i + 1;
    while (j < released_ranges_.size() && released_ranges_[j].file == first.file &&
           released_ranges_[j].p <= end) {
      end = std::max(end, released_ranges_[j].p + released_ranges_[j].n);
      ++j;
    }
    if (j > i + 1) first.file->release(first.p, static_cast<size_t>(end - first.p));
    i = j;
  }
  released_ranges_.clear();
  released_ranges_.shrink_to_fit();
}

// Large initializers read at run time straight from the mapping (an fp32
// embedding table) are read ahead now, so the first prompt does not wait on the
// disk, and marked random-access, so a row maps its own page, not 64 KiB around it.
void SessionImpl::advise_mapped_constants() {
  std::vector<bool> seen(values_.size(), false);
  for (const PlanNode& p : plan_)
    for (size_t i = 0; i < p.in.size() && p.op->packed_weight_bytes() == 0; ++i) {
      const int v = p.in[i];
      if (v < 0 || values_[v].kind != Kind::kConstant || seen[v] || !p.op->reads_constant_at_run(i)) continue;
      seen[v] = true;
      const Tensor& t = values_[v].t;
      const MappedFile* f = mapping_of(t);
      if (f == nullptr) continue;
      mapped_weight_bytes_ += t.bytes();
      if (t.bytes() >= (size_t{1} << 20)) {
        f->prefetch(t.data, t.bytes());
        f->random_access(t.data, t.bytes());
      }
    }
}

void SessionImpl::build() {
  const SessionOptions& options = shared_->options;
  const onnx::Graph& g = shared_->model.graph;
  std::vector<onnx::Node> nodes = sorted_nodes(g);
  fuse_matmul_nbits_bias(nodes, g);
  fuse_dequantize_matmul(nodes, g);
  fuse_dynamic_quantize_matmul(nodes, shared_->model);
  fuse_silu_mul(nodes, g);  // after the int8 rewrites: their MatMulDequantized are projections too
  fuse_mha_into_gqa(nodes, shared_->model.graph);
  fuse_rms_norm(nodes, g);
  fuse_optimum_attention(nodes, shared_->model);
  if (options.kv_cache != SessionOptions::KvCache::kModel)
    set_kv_cache_dtype(nodes, shared_->model.graph,
                       options.kv_cache == SessionOptions::KvCache::kF16 ? onnx::DataType::kFloat16
                                                                         : onnx::DataType::kFloat);
  lower_float_boundaries(nodes, g);
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

  for (const onnx::Node& node : nodes) {
    const OpFactory make = find_op(node.domain, node.op_type);
    NBITS_CHECK(make != nullptr, "unsupported op '", node.op_type, "' (domain '",
                node.domain.empty() ? "ai.onnx" : node.domain, "') at node '", node.name, "'");
    OpBuild b{node, {}, {}, {}, options};
    b.pool = &shared_->pool;
    b.opset = shared_->model.opset(node.domain);
    b.release_pages = [this](const void* p, size_t n) {
      if (const MappedFile* f = mapping_of(p, n)) f->release(p, n);
    };
    std::vector<int> in(node.inputs.size(), -1);
    bool all_const = true;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (node.inputs[i].empty()) {
        b.in_types.emplace_back();
        b.constants.push_back(nullptr);
        continue;
      }
      in[i] = value_id(node.inputs[i]);
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
      for (int i : in) consumed_at_load(i, view);
      continue;
    }
    for (size_t i = 0; i < in.size(); ++i) consumed_at_load(in[i], op->reads_constant_at_run(i));
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

  // Pointers into values_ are stable from here on.
  link_plan();
  std::vector<bool> counted(values_.size(), false);
  for (PlanNode& p : plan_) {
    const size_t packed = p.op->packed_weight_bytes();
    weight_bytes_ += packed;
    packed_weight_bytes_ += packed;
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

void SessionImpl::plan_buffers() {
  const int end = std::numeric_limits<int>::max();
  for (size_t pi = 0; pi < plan_.size(); ++pi) {
    PlanNode& p = plan_[pi];
    const int alias = p.op->alias_input();
    for (size_t i = 0; i < p.out.size(); ++i)
      if (p.out[i] >= 0 && alias >= 0 && i == 0 && p.in[alias] >= 0)
        values_[p.out[i]].root = values_[p.in[alias]].root;
    for (int i : p.in)
      if (i >= 0) {
        Value& r = values_[values_[i].root];
        r.last_use = std::max(r.last_use, static_cast<int>(pi));
      }
    for (int o : p.out)
      if (o >= 0) {
        Value& r = values_[values_[o].root];
        r.last_use = std::max(r.last_use, static_cast<int>(pi));
        if (values_[o].graph_output) r.last_use = end;
      }
  }
  std::vector<int> free_list;
  for (size_t pi = 0; pi < plan_.size(); ++pi) {
    PlanNode& p = plan_[pi];
    for (int o : p.out)
      if (o >= 0 && values_[o].root == o) {
        // Graph outputs live to the end and are often bound to caller memory (the KV
        // cache): they get a buffer of their own, so they never pin a large reusable one.
        if (free_list.empty() || values_[o].graph_output) {
          buffers_.push_back(std::make_unique<Buffer>());
          values_[o].buffer = static_cast<int>(buffers_.size()) - 1;
        } else {
          values_[o].buffer = free_list.back();
          free_list.pop_back();
        }
      }
    // Release the groups whose last reader is this node (after assigning outputs,
    // so a node never reads and writes the same buffer).
    auto release = [&](int id) {
      Value& r = values_[values_[id].root];
      if (r.kind == Kind::kRuntime && r.buffer >= 0 && r.last_use == static_cast<int>(pi)) {
        free_list.push_back(r.buffer);
        r.last_use = -2;  // released once
      }
    };
    for (int i : p.in)
      if (i >= 0) release(i);
    for (int o : p.out)
      if (o >= 0) release(o);
  }
}

void SessionImpl::run() {
  for (int i : inputs_)
    NBITS_CHECK(values_[i].bound, "run: graph input '", values_[i].name, "' is not bound");
  const bool profile = shared_->options.profile;
  RunContext ctx{shared_->pool};
  for (PlanNode& p : plan_) {
    const int64_t t0 = profile ? now_ns() : 0;
    const OpArgs args{p.in_ptrs.data(), p.in_ptrs.size(), p.out_ptrs.data(), p.out_ptrs.size(),
                      p.last_position};
    p.op->infer(args);
    const int alias = p.op->alias_input();
    bool copy_alias = false;
    for (size_t i = 0; i < p.out.size(); ++i) {
      if (p.out[i] < 0) continue;
      Value& v = values_[p.out[i]];
      if (v.bound) {
        NBITS_CHECK(v.binding.shape == v.t.shape, "run: output '", v.name, "' has shape ", v.t.shape.str(),
                    " but the bound buffer has shape ", v.binding.shape.str());
        v.t.data = v.binding.data;
        copy_alias = copy_alias || (alias >= 0 && i == 0);
      } else if (alias >= 0 && i == 0 && p.in[alias] >= 0) {
        v.t.data = p.in_ptrs[alias]->data;
      } else if (const void* view = p.op->output_view(args, i)) {
        v.t.data = const_cast<void*>(view);
      } else {
        v.t.data = buffers_[values_[v.root].buffer]->ensure(std::max<size_t>(v.t.bytes(), 1));
      }
    }
    if (alias < 0) {
      p.op->run(args, ctx);
    } else if (copy_alias && p.out_ptrs[0]->data != p.in_ptrs[alias]->data) {
      std::memcpy(p.out_ptrs[0]->data, p.in_ptrs[alias]->data, p.out_ptrs[0]->bytes());
    }
    if (profile) {
      ++p.calls;
      p.ms += static_cast<double>(now_ns() - t0) * 1e-6;
      p.kernel = p.op->kernel_name(args);
    }
  }
}

}  // namespace

std::unique_ptr<Session> Session::load(const std::string& path, const SessionOptions& options) {
  return std::make_unique<SessionImpl>(path, options);
}

std::unique_ptr<Session> Session::load(onnx::Model&& model, const SessionOptions& options) {
  return std::make_unique<SessionImpl>(std::move(model), options);
}

SessionOptions::KvCache parse_kv_cache(const std::string& s) {
  if (s == "model") return SessionOptions::KvCache::kModel;
  if (s == "f32") return SessionOptions::KvCache::kF32;
  if (s == "f16") return SessionOptions::KvCache::kF16;
  fail("--kv-cache must be model, f32 or f16 (got '", s, "')");
}

}  // namespace nbits::graph
