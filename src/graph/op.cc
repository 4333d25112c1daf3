#include "graph/op.h"

namespace nbits::graph {

std::string OpBuild::where() const { return detail::concat("node '", node.name, "' (", node.op_type, ")"); }

DType OpBuild::type(size_t i) const {
  check(has_input(i), "required input ", i, " is missing");
  return *in_types[i];
}

const Tensor& OpBuild::constant(size_t i, const char* what) const {
  check(has_input(i), "required input ", i, " (", what, ") is missing");
  const Tensor* t = constant_or_null(i);
  check(t != nullptr, "input ", i, " (", what, ") '", node.inputs[i], "' must be a constant initializer");
  return *t;
}

void OpBuild::require_type(size_t i, std::initializer_list<DType> allowed, const char* what) const {
  const DType t = type(i);
  for (DType a : allowed)
    if (a == t) return;
  std::string names;
  for (DType a : allowed) names += std::string(names.empty() ? "" : "/") + dtype_name(a);
  fail(where(), ": input ", i, " (", what, ") '", node.inputs[i], "' has dtype ", dtype_name(t),
       ", expected ", names);
}

void OpBuild::set_outputs(DType t) { out_types.assign(node.outputs.size(), t); }

std::optional<DType> to_dtype(onnx::DataType t) {
  using D = onnx::DataType;
  switch (t) {
    case D::kFloat:
      return DType::kF32;
    case D::kFloat16:
      return DType::kF16;
    case D::kBfloat16:
      return DType::kBF16;
    case D::kInt64:
      return DType::kI64;
    case D::kInt32:
      return DType::kI32;
    case D::kUint8:
      return DType::kU8;
    case D::kInt8:
      return DType::kI8;
    case D::kBool:
      return DType::kBool;
    case D::kUint4:
      return DType::kU4;
    case D::kInt4:
      return DType::kI4;
    default:
      return std::nullopt;
  }
}

Shape to_shape(const std::vector<int64_t>& dims, const std::string& what) {
  NBITS_CHECK(dims.size() <= static_cast<size_t>(Shape::kMaxRank), what, ": rank ", dims.size(),
              " is above the supported ", Shape::kMaxRank);
  Shape s;
  for (int64_t d : dims) {
    NBITS_CHECK(d >= 0, what, ": negative dimension ", d);
    s.push_back(d);
  }
  return s;
}

}  // namespace nbits::graph
