// ai.onnx If whose branches are constant (each branch output made by a
// Constant node of the branch): the LongRoPE cache choice of Phi-3.x /
// Phi-4-mini exports (If(Greater(total length, original context)) picks the
// long or short cos/sin caches). The outputs are views of the chosen branch's
// values, so a step copies nothing. Branches that compute anything are refused.
#include <cstring>
#include <vector>

#include "ops/op_util.h"
#include "ops/ops.h"

namespace nbits::ops {
namespace {

using graph::OpArgs;
using graph::RunContext;

struct BranchValue {
  Tensor t;                   // fp32 for float values (graph::compute_dtype)
  std::vector<uint8_t> data;  // owned bytes
};

class IfOp final : public Op {
 public:
  IfOp(std::vector<BranchValue> then_v, std::vector<BranchValue> else_v)
      : then_(std::move(then_v)), else_(std::move(else_v)) {}
  void infer(const OpArgs& a) const override {
    const std::vector<BranchValue>& taken = branch(a);
    for (size_t i = 0; i < a.n_out; ++i)
      if (a.out[i]) a.out[i]->shape = taken[i].t.shape;
  }
  void run(const OpArgs& a, RunContext&) const override {
    const std::vector<BranchValue>& taken = branch(a);
    for (size_t i = 0; i < a.n_out; ++i)
      if (a.out[i] && a.out[i]->data != taken[i].t.data)  // bound or folded: copy
        std::memcpy(a.out[i]->data, taken[i].t.data, taken[i].t.bytes());
  }
  const void* output_view(const OpArgs& a, size_t i) const override { return branch(a)[i].t.data; }

 private:
  const std::vector<BranchValue>& branch(const OpArgs& a) const {
    NBITS_CHECK(a.in[0]->numel() == 1, "If: cond must hold one value, got ", a.in[0]->shape.str());
    return *a.in[0]->as<const uint8_t>() != 0 ? then_ : else_;
  }

  std::vector<BranchValue> then_, else_;
};

std::vector<BranchValue> constant_branch(OpBuild& b, const char* name) {
  const onnx::Attribute* attr = b.node.attr(name);
  b.check(attr != nullptr && attr->type == onnx::AttrType::kGraph && attr->g, "missing graph attribute '",
          name, "'");
  const onnx::Graph& g = *attr->g;
  b.check(g.outputs.size() == b.node.outputs.size(), name, " has ", g.outputs.size(), " outputs, the node ",
          b.node.outputs.size());
  std::vector<BranchValue> values;
  for (const onnx::ValueInfo& out : g.outputs) {
    const onnx::Tensor* t = g.initializer(out.name);
    for (const onnx::Node& n : g.nodes)
      if (n.op_type == "Constant" && (n.domain.empty() || n.domain == "ai.onnx") && n.outputs.size() == 1 &&
          n.outputs[0] == out.name) {
        const onnx::Attribute* v = n.attr("value");
        b.check(v != nullptr && v->t.has_value(), name, " node '", n.name,
                "': only Constant 'value' tensors");
        t = &*v->t;
      }
    b.check(t != nullptr, name, " output '", out.name,
            "' is computed by nodes: only branches of constants are supported");
    const auto dt = graph::to_dtype(t->dtype);
    b.check(dt.has_value(), name, " output '", out.name, "' has unsupported dtype ",
            onnx::data_type_name(t->dtype));
    BranchValue bv;
    bv.t.dtype = graph::compute_dtype(*dt);
    bv.t.shape = graph::to_shape(t->dims, b.where());
    Tensor src{*dt, bv.t.shape, const_cast<uint8_t*>(t->bytes.data())};
    b.check(t->bytes.size() == src.bytes(), name, " output '", out.name, "' holds ", t->bytes.size(),
            " bytes for shape ", src.shape.str());
    if (bv.t.dtype != *dt) {
      const std::vector<float> wide = to_float_vector(src);
      bv.data.resize(wide.size() * sizeof(float));
      std::memcpy(bv.data.data(), wide.data(), bv.data.size());
    } else {
      bv.data.assign(t->bytes.begin(), t->bytes.end());
    }
    values.push_back(std::move(bv));
  }
  for (BranchValue& v : values) v.t.data = v.data.data();
  return values;
}

}  // namespace

std::unique_ptr<Op> make_if(OpBuild& b) {
  b.check(b.node.inputs.size() == 1 && b.has_input(0), "expects one input (cond)");
  b.require_type(0, {DType::kBool}, "cond");
  std::vector<BranchValue> then_v = constant_branch(b, "then_branch");
  std::vector<BranchValue> else_v = constant_branch(b, "else_branch");
  for (size_t i = 0; i < then_v.size(); ++i) {
    b.check(then_v[i].t.dtype == else_v[i].t.dtype, "output ", i, ": branches have dtypes ",
            graph::dtype_name(then_v[i].t.dtype), " and ", graph::dtype_name(else_v[i].t.dtype));
    b.out_types.push_back(then_v[i].t.dtype);
  }
  return std::make_unique<IfOp>(std::move(then_v), std::move(else_v));
}

}  // namespace nbits::ops
