// The session's entry points (Session::load, parse_kv_cache), forks, binding caller
// memory to graph inputs/outputs, and the lookups and reports over the plan
// (graph/session_impl.h lists the other files of the session).
#include "graph/session.h"

#include "graph/session_impl.h"

namespace nbits::graph {
namespace detail {

SessionImpl::SessionImpl(const SessionImpl& o, int /*fork*/)
    : shared_(o.shared_),
      values_(o.values_),
      ids_(o.ids_),
      inputs_(o.inputs_),
      outputs_(o.outputs_),
      plan_(o.plan_),
      weight_bytes_(o.weight_bytes_),
      packed_weight_bytes_(o.packed_weight_bytes_),
      streamed_weight_bytes_(o.streamed_weight_bytes_),
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

std::unique_ptr<Session> SessionImpl::fork() const {
  return std::unique_ptr<Session>(new SessionImpl(*this, 0));
}

void SessionImpl::link_plan() {
  for (PlanNode& p : plan_) {
    p.in_ptrs.clear();
    p.out_ptrs.clear();
    for (int i : p.in) p.in_ptrs.push_back(i >= 0 ? &values_[i].t : nullptr);
    for (int o : p.out) p.out_ptrs.push_back(o >= 0 ? &values_[o].t : nullptr);
  }
}

std::vector<std::string> SessionImpl::names(const std::vector<int>& ids) const {
  std::vector<std::string> r;
  for (int i : ids) r.push_back(values_[i].name);
  return r;
}

int SessionImpl::find(const std::vector<int>& ids, std::string_view name, const char* what) const {
  for (int i : ids)
    if (values_[i].name == name) return i;
  fail("no ", what, " named '", name, "'");
}

void SessionImpl::check_declared(const Value& v, const Shape& s, const char* who) const {
  if (!v.has_declared) return;
  NBITS_CHECK(static_cast<size_t>(s.rank) == v.declared.size(), who, " '", v.name, "': rank ", s.rank, " ",
              s.str(), " but the graph declares rank ", v.declared.size());
  for (int i = 0; i < s.rank; ++i)
    NBITS_CHECK(v.declared[i] < 0 || v.declared[i] == s[i], who, " '", v.name, "': shape ", s.str(),
                " but dim ", i, " is declared ", v.declared[i]);
}

std::string SessionImpl::output_producer(std::string_view name) const {
  const Value& v = values_[find(outputs_, name, "graph output")];
  return v.producer >= 0 ? plan_[v.producer].op_type : "";
}

bool SessionImpl::takes_row_pointers(std::string_view name) const {
  int id = -1;
  for (int i : inputs_)
    if (values_[i].name == name) id = i;
  for (int i : outputs_)
    if (values_[i].name == name) id = i;
  if (id < 0) return false;
  const Value& v = values_[id];
  if (v.kind == Kind::kConstant) return false;
  if (v.kind == Kind::kRuntime) {
    if (v.producer < 0) return false;
    const PlanNode& p = plan_[v.producer];
    for (size_t o = 0; o < p.out.size(); ++o)
      if (p.out[o] == id && !p.op->takes_row_pointers(true, o)) return false;
  }
  for (const PlanNode& p : plan_)
    for (size_t i = 0; i < p.in.size(); ++i)
      if (p.in[i] == id && !p.op->takes_row_pointers(false, i)) return false;
  return true;
}

void SessionImpl::bind_input(std::string_view name, const Tensor& t) {
  Value& v = values_[find(inputs_, name, "graph input")];
  NBITS_CHECK(t.rows == nullptr || (t.data == t.rows[0] && takes_row_pointers(name)), "bind_input '", v.name,
              "': rows apart (Tensor::rows) where a reader cannot take them");
  NBITS_CHECK(t.dtype == v.t.dtype, "bind_input '", v.name, "': dtype ", dtype_name(t.dtype),
              " but the graph declares ", dtype_name(v.t.dtype));
  check_declared(v, t.shape, "bind_input");
  NBITS_CHECK(t.data != nullptr || t.numel() == 0, "bind_input '", v.name, "': null data");
  v.bound = true;
  v.binding = t;
  v.t = t;
}

void SessionImpl::bind_output(std::string_view name, const Tensor& t) {
  Value& v = values_[find(outputs_, name, "graph output")];
  NBITS_CHECK(t.dtype == v.t.dtype, "bind_output '", v.name, "': dtype ", dtype_name(t.dtype),
              " but the graph produces ", dtype_name(v.t.dtype));
  NBITS_CHECK(v.kind == Kind::kRuntime, "bind_output '", v.name, "': output is not computed by a node");
  NBITS_CHECK(t.rows == nullptr || (t.data == t.rows[0] && takes_row_pointers(name)), "bind_output '", v.name,
              "': rows apart (Tensor::rows) where its producer or a reader cannot take them");
  v.bound = true;
  v.binding = t;
}

void SessionImpl::set_last_position_only(std::string_view logits_name, bool on) {
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

std::vector<MatMulNBitsInfo> SessionImpl::matmul_nbits_info() const {
  std::vector<MatMulNBitsInfo> r;
  for (const PlanNode& p : plan_)
    for (MatMulNBitsInfo& info : p.op->nbits_info()) r.push_back(std::move(info));
  return r;
}

std::vector<ProfileEntry> SessionImpl::profile() const {
  std::vector<ProfileEntry> r;
  for (const PlanNode& p : plan_) r.push_back({p.name, p.op_type, p.kernel, p.calls, p.ms});
  return r;
}

void SessionImpl::reset_profile() {
  for (PlanNode& p : plan_) p.calls = 0, p.ms = 0.0;
}

}  // namespace detail

std::unique_ptr<Session> Session::load(const std::string& path, const SessionOptions& options) {
  return std::make_unique<detail::SessionImpl>(path, options);
}

std::unique_ptr<Session> Session::load(onnx::Model&& model, const SessionOptions& options) {
  return std::make_unique<detail::SessionImpl>(std::move(model), options);
}

SessionOptions::KvCache parse_kv_cache(const std::string& s) {
  if (s == "model") return SessionOptions::KvCache::kModel;
  if (s == "f32") return SessionOptions::KvCache::kF32;
  if (s == "f16") return SessionOptions::KvCache::kF16;
  if (s == "q8") return SessionOptions::KvCache::kQ8;
  fail("--kv-cache must be model, f32, f16 or q8 (got '", s, "')");
}

}  // namespace nbits::graph
