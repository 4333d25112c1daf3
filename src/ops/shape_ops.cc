// Shape and layout ops: Identity, Reshape, Squeeze, Unsqueeze (views of their
// input), Flatten (a view too), Transpose, Shape, Constant, Concat, Slice (ReduceSum: reduce.cc).
#include <algorithm>
#include <cstring>

#include "ops/op_util.h"
#include "ops/ops.h"

namespace nbits::ops {
namespace {

using graph::OpArgs;
using graph::RunContext;

// Base of the ops whose output 0 is a view of input 0.
class ViewOp : public Op {
 public:
  int alias_input() const override { return 0; }
  void run(const OpArgs&, RunContext&) const override {}
};

class IdentityOp final : public ViewOp {
 public:
  void infer(const OpArgs& a) const override { a.out[0]->shape = a.in[0]->shape; }
};

class ReshapeOp final : public ViewOp {
 public:
  ReshapeOp(std::string where, bool allowzero) : where_(std::move(where)), allowzero_(allowzero) {}
  void infer(const OpArgs& a) const override {
    const Tensor& x = *a.in[0];
    const Tensor& spec = *a.in[1];
    NBITS_CHECK(spec.shape.rank == 1 && spec.numel() <= Shape::kMaxRank, where_, ": shape input must be 1-D");
    Shape s;
    int infer_at = -1;
    int64_t known = 1;
    for (int64_t i = 0; i < spec.numel(); ++i) {
      int64_t d = read_int(spec, i);
      if (d == 0 && !allowzero_) {
        NBITS_CHECK(i < x.shape.rank, where_, ": 0 in shape at axis ", i, " beyond input rank");
        d = x.shape[static_cast<int>(i)];
      }
      if (d == -1) {
        NBITS_CHECK(infer_at < 0, where_, ": more than one -1 in shape");
        infer_at = static_cast<int>(i);
        d = 1;
      } else {
        NBITS_CHECK(d >= 0, where_, ": invalid dimension ", d);
        known *= d;
      }
      s.push_back(d);
    }
    if (infer_at >= 0) {
      NBITS_CHECK(known > 0 && x.numel() % known == 0, where_, ": cannot reshape ", x.shape.str());
      s[infer_at] = x.numel() / known;
    }
    NBITS_CHECK(s.numel() == x.numel(), where_, ": cannot reshape ", x.shape.str(), " (", x.numel(),
                " elements) to ", s.str());
    a.out[0]->shape = s;
  }

 private:
  std::string where_;
  bool allowzero_;
};

class SqueezeOp final : public ViewOp {
 public:
  SqueezeOp(std::string where, std::vector<int64_t> axes)
      : where_(std::move(where)), axes_(std::move(axes)) {}
  void infer(const OpArgs& a) const override {
    const Shape& in = a.in[0]->shape;
    bool drop[Shape::kMaxRank] = {};
    const Tensor* t = a.input(1);
    const int64_t n = t ? t->numel() : static_cast<int64_t>(axes_.size());
    for (int64_t i = 0; i < n; ++i) {
      const int ax = normalize_axis(t ? read_int(*t, i) : axes_[i], in.rank, where_);
      NBITS_CHECK(in[ax] == 1, where_, ": cannot squeeze axis ", ax, " of ", in.str());
      drop[ax] = true;
    }
    Shape s;
    for (int i = 0; i < in.rank; ++i)
      if (!(n == 0 ? in[i] == 1 : drop[i])) s.push_back(in[i]);
    a.out[0]->shape = s;
  }

 private:
  std::string where_;
  std::vector<int64_t> axes_;
};

class UnsqueezeOp final : public ViewOp {
 public:
  UnsqueezeOp(std::string where, std::vector<int64_t> axes)
      : where_(std::move(where)), axes_(std::move(axes)) {}
  void infer(const OpArgs& a) const override {
    const Shape& in = a.in[0]->shape;
    const Tensor* t = a.input(1);
    const int64_t n = t ? t->numel() : static_cast<int64_t>(axes_.size());
    const int rank = in.rank + static_cast<int>(n);
    NBITS_CHECK(rank <= Shape::kMaxRank, where_, ": output rank ", rank, " too large");
    bool ins[Shape::kMaxRank] = {};
    for (int64_t i = 0; i < n; ++i) {
      const int ax = normalize_axis(t ? read_int(*t, i) : axes_[i], rank, where_);
      NBITS_CHECK(!ins[ax], where_, ": repeated axis ", ax);
      ins[ax] = true;
    }
    Shape s;
    for (int i = 0, j = 0; i < rank; ++i) s.push_back(ins[i] ? 1 : in[j++]);
    a.out[0]->shape = s;
  }

 private:
  std::string where_;
  std::vector<int64_t> axes_;
};

// Flatten: [d0..d(axis-1)] x [d(axis)..] as a 2-D view (axis may be negative; 0 gives [1, numel]).
class FlattenOp final : public ViewOp {
 public:
  FlattenOp(std::string where, int64_t axis) : where_(std::move(where)), axis_(axis) {}
  void infer(const OpArgs& a) const override {
    const Shape& in = a.in[0]->shape;
    const int64_t ax = axis_ < 0 ? axis_ + in.rank : axis_;
    NBITS_CHECK(ax >= 0 && ax <= in.rank, where_, ": axis ", axis_, " out of range for rank ", in.rank);
    int64_t outer = 1;
    for (int i = 0; i < ax; ++i) outer *= in[i];
    int64_t inner = 1;
    for (int i = static_cast<int>(ax); i < in.rank; ++i) inner *= in[i];
    a.out[0]->shape = Shape{outer, inner};
  }

 private:
  std::string where_;
  int64_t axis_;
};

class TransposeOp final : public Op {
 public:
  TransposeOp(std::string where, std::vector<int64_t> perm)
      : where_(std::move(where)), perm_(std::move(perm)) {}
  void infer(const OpArgs& a) const override {
    const Shape& in = a.in[0]->shape;
    NBITS_CHECK(perm_.empty() || static_cast<int>(perm_.size()) == in.rank, where_, ": perm has ",
                perm_.size(), " entries for rank ", in.rank);
    Shape s;
    for (int i = 0; i < in.rank; ++i) s.push_back(in[axis(i, in.rank)]);
    a.out[0]->shape = s;
  }
  void run(const OpArgs& a, RunContext&) const override {
    const Tensor& x = *a.in[0];
    Tensor& y = *a.out[0];
    const int rank = x.shape.rank;
    const size_t es = graph::dtype_size(x.dtype);
    int64_t in_stride[Shape::kMaxRank], st[Shape::kMaxRank], idx[Shape::kMaxRank] = {};
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; --i) in_stride[i] = s, s *= x.shape[i];
    for (int i = 0; i < rank; ++i) st[i] = in_stride[axis(i, rank)];
    const auto* src = static_cast<const uint8_t*>(x.data);
    auto* dst = static_cast<uint8_t*>(y.data);
    int64_t off = 0;
    for (int64_t i = 0; i < y.numel(); ++i) {
      std::memcpy(dst + i * es, src + off * es, es);
      for (int d = rank - 1; d >= 0; --d) {
        off += st[d];
        if (++idx[d] < y.shape[d]) break;
        off -= st[d] * idx[d];
        idx[d] = 0;
      }
    }
  }

 private:
  int axis(int i, int rank) const { return perm_.empty() ? rank - 1 - i : static_cast<int>(perm_[i]); }
  std::string where_;
  std::vector<int64_t> perm_;
};

class ShapeOp final : public Op {
 public:
  ShapeOp(int64_t start, std::optional<int64_t> end) : start_(start), end_(end) {}
  void infer(const OpArgs& a) const override {
    const auto [s, e] = range(a.in[0]->shape.rank);
    a.out[0]->shape = Shape{e - s};
  }
  void run(const OpArgs& a, RunContext&) const override {
    const auto [s, e] = range(a.in[0]->shape.rank);
    for (int i = s; i < e; ++i) a.out[0]->as<int64_t>()[i - s] = a.in[0]->shape[i];
  }

 private:
  // [start, end) of the dims reported, clamped to the rank.
  std::pair<int, int> range(int rank) const {
    auto clamp = [rank](int64_t v) {
      return static_cast<int>(std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank));
    };
    const int s = clamp(start_);
    return {s, std::max(s, clamp(end_.value_or(rank)))};
  }
  int64_t start_;
  std::optional<int64_t> end_;
};

class ConstantOp final : public Op {
 public:
  // fp16/bf16 values are widened to fp32 (graph::compute_dtype): the op owns that copy.
  explicit ConstantOp(Tensor value) : value_(value) {
    if (graph::compute_dtype(value.dtype) != value.dtype) {
      widened_ = to_float_vector(value);
      value_.dtype = DType::kF32;
      value_.data = widened_.data();
    }
  }
  void infer(const OpArgs& a) const override { a.out[0]->shape = value_.shape; }
  void run(const OpArgs& a, RunContext&) const override {
    if (value_.bytes()) std::memcpy(a.out[0]->data, value_.data, value_.bytes());
  }

 private:
  Tensor value_;
  std::vector<float> widened_;
};

class ConcatOp final : public Op {
 public:
  ConcatOp(std::string where, int64_t axis) : where_(std::move(where)), axis_(axis) {}
  void infer(const OpArgs& a) const override {
    const Shape& first = a.in[0]->shape;
    const int ax = normalize_axis(axis_, first.rank, where_);
    Shape s = first;
    s[ax] = 0;
    for (size_t i = 0; i < a.n_in; ++i) {
      const Shape& si = a.in[i]->shape;
      NBITS_CHECK(si.rank == first.rank, where_, ": inputs have ranks ", first.rank, " and ", si.rank);
      for (int d = 0; d < si.rank; ++d)
        NBITS_CHECK(d == ax || si[d] == first[d], where_, ": shapes ", first.str(), " and ", si.str(),
                    " differ outside the concat axis");
      s[ax] += si[ax];
    }
    a.out[0]->shape = s;
  }
  void run(const OpArgs& a, RunContext&) const override {
    const Shape& os = a.out[0]->shape;
    const int ax = normalize_axis(axis_, os.rank, where_);
    const size_t es = graph::dtype_size(a.out[0]->dtype);
    const int64_t outer = dims_product(os, 0, ax), inner = dims_product(os, ax + 1, os.rank);
    auto* dst = static_cast<uint8_t*>(a.out[0]->data);
    int64_t offset = 0;
    for (size_t i = 0; i < a.n_in; ++i) {
      const Tensor& x = *a.in[i];
      const int64_t rows = x.shape[ax] * inner;
      for (int64_t o = 0; o < outer; ++o)
        if (rows)
          std::memcpy(dst + (o * os[ax] * inner + offset) * es,
                      static_cast<const uint8_t*>(x.data) + o * rows * es, rows * es);
      offset += rows;
    }
  }

 private:
  std::string where_;
  int64_t axis_;
};

class SliceOp final : public Op {
 public:
  explicit SliceOp(std::string where) : where_(std::move(where)) {}
  void infer(const OpArgs& a) const override {
    Window w;
    a.out[0]->shape = window(a, w);
  }
  void run(const OpArgs& a, RunContext&) const override {
    Window w;
    window(a, w);
    const Tensor& x = *a.in[0];
    Tensor& y = *a.out[0];
    const int rank = x.shape.rank;
    const size_t es = graph::dtype_size(x.dtype);
    int64_t st[Shape::kMaxRank], idx[Shape::kMaxRank] = {};
    int64_t s = 1, base = 0;
    for (int i = rank - 1; i >= 0; --i) {
      st[i] = s * w.step[i];
      base += s * w.start[i];
      s *= x.shape[i];
    }
    const auto* src = static_cast<const uint8_t*>(x.data);
    auto* dst = static_cast<uint8_t*>(y.data);
    int64_t off = base;
    for (int64_t i = 0; i < y.numel(); ++i) {
      std::memcpy(dst + i * es, src + off * es, es);
      for (int d = rank - 1; d >= 0; --d) {
        off += st[d];
        if (++idx[d] < y.shape[d]) break;
        off -= st[d] * idx[d];
        idx[d] = 0;
      }
    }
  }

 private:
  struct Window {
    int64_t start[Shape::kMaxRank] = {}, step[Shape::kMaxRank] = {};
  };
  // The output shape; w: the first index and the step along each axis.
  Shape window(const OpArgs& a, Window& w) const {
    const Shape& in = a.in[0]->shape;
    for (int d = 0; d < in.rank; ++d) w.start[d] = 0, w.step[d] = 1;
    Shape s = in;
    const Tensor &starts = *a.in[1], &ends = *a.in[2];
    const Tensor* axes = a.input(3);
    const Tensor* steps = a.input(4);
    NBITS_CHECK(starts.numel() == ends.numel(), where_, ": starts and ends differ in length");
    for (int64_t i = 0; i < starts.numel(); ++i) {
      const int ax = normalize_axis(axes ? read_int(*axes, i) : i, in.rank, where_);
      const int64_t dim = in[ax];
      const int64_t step = steps ? read_int(*steps, i) : 1;
      NBITS_CHECK(step != 0, where_, ": step 0");
      int64_t b = read_int(starts, i), e = read_int(ends, i);
      if (b < 0) b += dim;
      if (e < 0) e += dim;
      if (step > 0) {
        b = std::clamp<int64_t>(b, 0, dim);
        e = std::clamp<int64_t>(e, 0, dim);
        s[ax] = e > b ? (e - b + step - 1) / step : 0;
      } else {
        b = std::clamp<int64_t>(b, 0, dim - 1);
        e = std::clamp<int64_t>(e, -1, dim - 1);
        s[ax] = b > e ? (b - e - step - 1) / -step : 0;
      }
      w.start[ax] = b;
      w.step[ax] = step;
    }
    return s;
  }
  std::string where_;
};

void require_int_input(OpBuild& b, size_t i, const char* what) {
  if (b.has_input(i)) b.require_type(i, {DType::kI64, DType::kI32}, what);
}

}  // namespace

std::unique_ptr<Op> make_identity(OpBuild& b) {
  b.set_outputs(b.type(0));
  return std::make_unique<IdentityOp>();
}

std::unique_ptr<Op> make_reshape(OpBuild& b) {
  b.check(b.has_input(1), "missing input 'shape'");
  require_int_input(b, 1, "shape");
  b.check(!(b.type(0) == DType::kU4 || b.type(0) == DType::kI4), "4-bit data cannot be reshaped");
  b.set_outputs(b.type(0));
  return std::make_unique<ReshapeOp>(b.where(), b.node.attr_int("allowzero", 0) != 0);
}

std::unique_ptr<Op> make_squeeze(OpBuild& b) {
  require_int_input(b, 1, "axes");
  b.set_outputs(b.type(0));
  return std::make_unique<SqueezeOp>(b.where(), b.node.attr_ints("axes"));
}

std::unique_ptr<Op> make_unsqueeze(OpBuild& b) {
  require_int_input(b, 1, "axes");
  b.check(b.has_input(1) || b.node.attr("axes") != nullptr, "missing required attribute 'axes'");
  b.set_outputs(b.type(0));
  return std::make_unique<UnsqueezeOp>(b.where(), b.node.attr_ints("axes"));
}

std::unique_ptr<Op> make_flatten(OpBuild& b) {
  allow_attributes(b, {"axis"});
  b.check(!(b.type(0) == DType::kU4 || b.type(0) == DType::kI4), "4-bit data cannot be flattened");
  b.set_outputs(b.type(0));
  return std::make_unique<FlattenOp>(b.where(), b.node.attr_int("axis", 1));
}

std::unique_ptr<Op> make_transpose(OpBuild& b) {
  b.check(b.type(0) != DType::kU4 && b.type(0) != DType::kI4, "4-bit data cannot be transposed");
  std::vector<int64_t> perm = b.node.attr_ints("perm");
  std::vector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    b.check(p >= 0 && p < static_cast<int64_t>(perm.size()) && !seen[p],
            "attribute 'perm' is not a permutation");
    seen[p] = true;
  }
  b.set_outputs(b.type(0));
  return std::make_unique<TransposeOp>(b.where(), std::move(perm));
}

std::unique_ptr<Op> make_shape(OpBuild& b) {
  b.set_outputs(DType::kI64);
  std::optional<int64_t> end;
  if (b.node.attr("end") != nullptr) end = b.node.attr_int("end", 0);
  return std::make_unique<ShapeOp>(b.node.attr_int("start", 0), end);
}

std::unique_ptr<Op> make_constant(OpBuild& b) {
  const onnx::Attribute* v = b.node.attr("value");
  b.check(v != nullptr && v->t.has_value(), "only the 'value' tensor attribute is supported");
  const onnx::Tensor& t = *v->t;
  const auto dt = graph::to_dtype(t.dtype);
  b.check(dt.has_value(), "value has unsupported dtype ", onnx::data_type_name(t.dtype));
  Tensor value;
  value.dtype = *dt;
  value.shape = graph::to_shape(t.dims, b.where());
  b.check(t.bytes.size() == value.bytes(), "value holds ", t.bytes.size(), " bytes for shape ",
          value.shape.str());
  value.data = const_cast<uint8_t*>(t.bytes.data());
  b.set_outputs(graph::compute_dtype(*dt));
  return std::make_unique<ConstantOp>(value);
}

std::unique_ptr<Op> make_concat(OpBuild& b) {
  b.check(b.node.attr("axis") != nullptr, "missing required attribute 'axis'");
  for (size_t i = 0; i < b.node.inputs.size(); ++i) {
    b.check(b.has_input(i) && b.type(i) == b.type(0), "input ", i, " is missing or has another dtype");
  }
  b.check(b.type(0) != DType::kU4 && b.type(0) != DType::kI4, "4-bit data cannot be concatenated");
  b.set_outputs(b.type(0));
  return std::make_unique<ConcatOp>(b.where(), b.node.attr_int("axis", 0));
}

std::unique_ptr<Op> make_slice(OpBuild& b) {
  b.check(b.has_input(1) && b.has_input(2), "needs inputs 'starts' and 'ends' (opset >= 10)");
  for (size_t i = 1; i <= 4; ++i) require_int_input(b, i, "starts/ends/axes/steps");
  b.check(b.type(0) != DType::kU4 && b.type(0) != DType::kI4, "4-bit data cannot be sliced");
  b.set_outputs(b.type(0));
  return std::make_unique<SliceOp>(b.where());
}

}  // namespace nbits::ops
