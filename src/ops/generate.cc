// Ops that make or copy tensors: ConstantOfShape, Range, Expand, Tile, Split. All but Range are
// dtype-generic (they move elements of dtype_size bytes).
#include <cmath>
#include <cstring>

#include "ops/op_util.h"
#include "ops/ops.h"

namespace nbits::ops {
namespace {

using graph::OpArgs;
using graph::RunContext;

bool is_4bit(DType t) { return t == DType::kU4 || t == DType::kI4; }

// A 1-D int64/int32 tensor of dims (ConstantOfShape's input, Expand's shape) as a Shape.
Shape shape_from_values(const Tensor& t, const std::string& where, const char* what) {
  NBITS_CHECK(t.shape.rank == 1, where, ": ", what, " must be 1-D, got ", t.shape.str());
  NBITS_CHECK(t.numel() <= Shape::kMaxRank, where, ": ", what, " has rank ", t.numel(),
              " above the supported ", Shape::kMaxRank);
  Shape s;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const int64_t d = read_int(t, i);
    NBITS_CHECK(d >= 0, where, ": ", what, " holds negative dimension ", d);
    s.push_back(d);
  }
  return s;
}

// y = x repeated: every dim of y is a multiple of x's (x right-aligned, missing leading dims 1),
// y[i] = x[i mod dims(x)]. Serves Tile and Expand (whose x dims are 1 or y's). Whole trailing
// blocks that are not repeated go in one memcpy; repeats copy what is already written.
class TileCopy {
 public:
  TileCopy(const Tensor& x, Tensor& y) : rank_(y.shape.rank), y_(y.shape) {
    const size_t es = graph::dtype_size(y.dtype);
    in_block_[rank_] = out_block_[rank_] = es;
    same_tail_[rank_] = true;
    for (int d = rank_ - 1; d >= 0; --d) {
      const int xd = d - (rank_ - x.shape.rank);
      in_[d] = xd >= 0 ? x.shape[xd] : 1;
      in_block_[d] = in_block_[d + 1] * static_cast<size_t>(in_[d]);
      out_block_[d] = out_block_[d + 1] * static_cast<size_t>(y_[d]);
      same_tail_[d] = same_tail_[d + 1] && in_[d] == y_[d];
    }
    if (y.numel() > 0) fill(0, static_cast<const uint8_t*>(x.data), static_cast<uint8_t*>(y.data));
  }

 private:
  void fill(int d, const uint8_t* src, uint8_t* dst) const {
    if (d >= Shape::kMaxRank ||
        same_tail_[d]) {  // (the first test only bounds the recursion for the compiler)
      std::memcpy(dst, src, in_block_[d]);
      return;
    }
    for (int64_t i = 0; i < in_[d]; ++i) fill(d + 1, src + i * in_block_[d + 1], dst + i * out_block_[d + 1]);
    const size_t chunk = static_cast<size_t>(in_[d]) * out_block_[d + 1];
    for (int64_t k = 1; k < y_[d] / in_[d]; ++k) std::memcpy(dst + k * chunk, dst, chunk);
  }
  int rank_;
  Shape y_;
  int64_t in_[Shape::kMaxRank] = {};
  size_t in_block_[Shape::kMaxRank + 1] = {}, out_block_[Shape::kMaxRank + 1] = {};
  bool same_tail_[Shape::kMaxRank + 1] = {};
};

class ConstantOfShapeOp final : public Op {
 public:
  ConstantOfShapeOp(std::string where, const uint8_t* value, size_t es) : where_(std::move(where)), es_(es) {
    std::memcpy(value_, value, es);
  }
  void infer(const OpArgs& a) const override {
    a.out[0]->shape = shape_from_values(*a.in[0], where_, "input");
  }
  void run(const OpArgs& a, RunContext&) const override {
    const int64_t n = a.out[0]->numel();
    if (es_ == 8) return fill<uint64_t>(a.out[0]->data, n);
    if (es_ == 4) return fill<uint32_t>(a.out[0]->data, n);
    if (es_ == 2) return fill<uint16_t>(a.out[0]->data, n);
    std::memset(a.out[0]->data, value_[0], static_cast<size_t>(n));
  }

 private:
  template <typename T>
  void fill(void* p, int64_t n) const {
    T v;
    std::memcpy(&v, value_, sizeof(T));
    T* y = static_cast<T*>(p);
    for (int64_t i = 0; i < n; ++i) y[i] = v;
  }
  std::string where_;
  uint8_t value_[8] = {};
  size_t es_;
};

class RangeOp final : public Op {
 public:
  RangeOp(DType t, std::string where) : type_(t), where_(std::move(where)) {}
  void infer(const OpArgs& a) const override {
    for (size_t i = 0; i < 3; ++i)
      NBITS_CHECK(a.in[i]->numel() == 1, where_, ": input ", i, " must be a scalar, got ",
                  a.in[i]->shape.str());
    int64_t n = 0;
    if (type_ == DType::kF32) {
      const float s = a.in[0]->as<const float>()[0], l = a.in[1]->as<const float>()[0],
                  d = a.in[2]->as<const float>()[0];
      NBITS_CHECK(d != 0.0f, where_, ": delta is 0");
      const double c = std::ceil(static_cast<double>(l - s) / static_cast<double>(d));
      NBITS_CHECK(std::isfinite(c) && c < 1e15, where_, ": range of ", c, " elements");
      n = static_cast<int64_t>(c);
    } else {
      const int64_t s = read_int(*a.in[0], 0), l = read_int(*a.in[1], 0), d = read_int(*a.in[2], 0);
      NBITS_CHECK(d != 0, where_, ": delta is 0");
      const int64_t span = l - s;
      n = span / d + ((span % d != 0) && ((span < 0) == (d < 0)) ? 1 : 0);  // ceil(span / d)
    }
    a.out[0]->shape = Shape{std::max<int64_t>(n, 0)};
  }
  void run(const OpArgs& a, RunContext&) const override {
    const int64_t n = a.out[0]->numel();
    if (type_ == DType::kF32) {
      const float s = a.in[0]->as<const float>()[0], d = a.in[2]->as<const float>()[0];
      float* y = a.out[0]->as<float>();
      for (int64_t i = 0; i < n; ++i) y[i] = s + static_cast<float>(i) * d;
    } else if (type_ == DType::kI64) {
      const int64_t s = read_int(*a.in[0], 0), d = read_int(*a.in[2], 0);
      int64_t* y = a.out[0]->as<int64_t>();
      for (int64_t i = 0; i < n; ++i) y[i] = s + i * d;
    } else {
      const int64_t s = read_int(*a.in[0], 0), d = read_int(*a.in[2], 0);
      int32_t* y = a.out[0]->as<int32_t>();
      for (int64_t i = 0; i < n; ++i) y[i] = static_cast<int32_t>(s + i * d);
    }
  }

 private:
  DType type_;
  std::string where_;
};

class ExpandOp final : public Op {
 public:
  explicit ExpandOp(std::string where) : where_(std::move(where)) {}
  void infer(const OpArgs& a) const override {
    a.out[0]->shape = broadcast_shapes(a.in[0]->shape, shape_from_values(*a.in[1], where_, "shape"), where_);
  }
  void run(const OpArgs& a, RunContext&) const override { TileCopy(*a.in[0], *a.out[0]); }

 private:
  std::string where_;
};

class TileOp final : public Op {
 public:
  explicit TileOp(std::string where) : where_(std::move(where)) {}
  void infer(const OpArgs& a) const override {
    const Shape& in = a.in[0]->shape;
    const Tensor& reps = *a.in[1];
    NBITS_CHECK(reps.shape.rank == 1 && reps.numel() == in.rank, where_, ": repeats ", reps.shape.str(),
                " must be 1-D with one entry per input axis (", in.rank, ")");
    Shape s = in;
    for (int d = 0; d < in.rank; ++d) {
      const int64_t r = read_int(reps, d);
      NBITS_CHECK(r >= 0, where_, ": negative repeat ", r);
      s[d] = in[d] * r;
    }
    a.out[0]->shape = s;
  }
  void run(const OpArgs& a, RunContext&) const override { TileCopy(*a.in[0], *a.out[0]); }

 private:
  std::string where_;
};

// Split along `axis`: sizes from the split input (opset >= 13), the split attribute (opset < 13),
// num_outputs (opset >= 18: ceil(dim / n) each, the last smaller) or equal parts.
class SplitOp final : public Op {
 public:
  SplitOp(std::string where, int64_t axis, std::vector<int64_t> split_attr, bool num_outputs, size_t n_out)
      : where_(std::move(where)),
        axis_(axis),
        split_attr_(std::move(split_attr)),
        num_outputs_(num_outputs),
        n_out_(n_out) {}
  void infer(const OpArgs& a) const override {
    const Shape& in = a.in[0]->shape;
    const int ax = normalize_axis(axis_, in.rank, where_);
    const std::vector<int64_t>& sizes = split_sizes(a);
    for (size_t i = 0; i < a.n_out; ++i)
      if (a.out[i]) {
        Shape s = in;
        s[ax] = sizes[i];
        a.out[i]->shape = s;
      }
  }
  void run(const OpArgs& a, RunContext&) const override {
    const std::vector<int64_t>& sizes = split_sizes(a);
    const Tensor& x = *a.in[0];
    const int ax = normalize_axis(axis_, x.shape.rank, where_);
    const size_t es = graph::dtype_size(x.dtype);
    const int64_t outer = dims_product(x.shape, 0, ax), inner = dims_product(x.shape, ax + 1, x.shape.rank);
    const auto* src = static_cast<const uint8_t*>(x.data);
    int64_t offset = 0;  // in elements of one outer slice
    for (size_t i = 0; i < sizes.size(); ++i) {
      const size_t bytes = static_cast<size_t>(sizes[i] * inner) * es;
      if (Tensor* y = a.output(i); y && bytes > 0) {
        auto* dst = static_cast<uint8_t*>(y->data);
        for (int64_t o = 0; o < outer; ++o)
          std::memcpy(dst + o * bytes, src + (o * x.shape[ax] * inner + offset) * es, bytes);
      }
      offset += sizes[i] * inner;
    }
  }

 private:
  // The size of each output along the axis (in scratch of the calling thread).
  const std::vector<int64_t>& split_sizes(const OpArgs& a) const {
    thread_local std::vector<int64_t> sizes;
    sizes.resize(n_out_);
    const Shape& in = a.in[0]->shape;
    const int ax = normalize_axis(axis_, in.rank, where_);
    const int64_t dim = in[ax], n = static_cast<int64_t>(sizes.size());
    const Tensor* split = a.input(1);
    if (split || !split_attr_.empty()) {
      const int64_t m = split ? split->numel() : static_cast<int64_t>(split_attr_.size());
      NBITS_CHECK(m == n, where_, ": split has ", m, " entries for ", n, " outputs");
      int64_t total = 0;
      for (int64_t i = 0; i < n; ++i) {
        sizes[i] = split ? read_int(*split, i) : split_attr_[i];
        NBITS_CHECK(sizes[i] >= 0, where_, ": negative split size ", sizes[i]);
        total += sizes[i];
      }
      NBITS_CHECK(total == dim, where_, ": split sizes add up to ", total, ", axis ", ax, " of ", in.str(),
                  " has ", dim);
    } else if (num_outputs_) {
      const int64_t chunk = (dim + n - 1) / n;
      NBITS_CHECK(chunk * (n - 1) <= dim, where_, ": axis ", ax, " of ", in.str(), " cannot be split into ",
                  n, " chunks of ", chunk);
      for (int64_t i = 0; i < n; ++i) sizes[i] = i + 1 < n ? chunk : dim - chunk * (n - 1);
    } else {
      NBITS_CHECK(dim % n == 0, where_, ": axis ", ax, " of ", in.str(), " does not split evenly into ", n,
                  " outputs");
      for (int64_t i = 0; i < n; ++i) sizes[i] = dim / n;
    }
    return sizes;
  }
  std::string where_;
  int64_t axis_;
  std::vector<int64_t> split_attr_;
  bool num_outputs_;
  size_t n_out_;
};

void require_shape_input(OpBuild& b, size_t i, const char* what) {
  b.check(b.has_input(i), "missing required input ", i, " (", what, ")");
  b.require_type(i, {DType::kI64, DType::kI32}, what);
}

// Expand and Tile: any dtype but 4-bit, a 1-D int second input.
template <typename OpT>
std::unique_ptr<Op> make_repeat(OpBuild& b, const char* what) {
  allow_attributes(b, {});
  b.check(!is_4bit(b.type(0)), "4-bit data is not supported");
  require_shape_input(b, 1, what);
  b.set_outputs(b.type(0));
  return std::make_unique<OpT>(b.where());
}

}  // namespace

std::unique_ptr<Op> make_constant_of_shape(OpBuild& b) {
  allow_attributes(b, {"value"});
  require_shape_input(b, 0, "input");
  uint8_t value[8] = {};  // default: float 0
  DType out = DType::kF32;
  if (const onnx::Attribute* v = b.node.attr("value")) {
    b.check(v->t.has_value(), "attribute 'value' must be a tensor");
    const onnx::Tensor& t = *v->t;
    const auto dt = graph::to_dtype(t.dtype);
    b.check(dt.has_value() && !is_4bit(*dt), "attribute 'value' has unsupported dtype ",
            onnx::data_type_name(t.dtype));
    b.check(t.numel() == 1 && t.bytes.size() == graph::dtype_size(*dt),
            "attribute 'value' must hold one element");
    out = graph::compute_dtype(*dt);
    if (out != *dt) {
      const float f = load_float(t.bytes.data(), *dt, 0);
      std::memcpy(value, &f, sizeof(f));
    } else {
      std::memcpy(value, t.bytes.data(), t.bytes.size());
    }
  }
  b.set_outputs(out);
  return std::make_unique<ConstantOfShapeOp>(b.where(), value, graph::dtype_size(out));
}

std::unique_ptr<Op> make_range(OpBuild& b) {
  allow_attributes(b, {});
  b.check(b.node.inputs.size() == 3, "expects 3 inputs (start, limit, delta)");
  b.require_type(0, {DType::kF32, DType::kI64, DType::kI32}, "start");
  for (size_t i = 1; i < 3; ++i)
    b.check(b.has_input(i) && b.type(i) == b.type(0), "input ", i, " is missing or has another dtype than ",
            graph::dtype_name(b.type(0)));
  b.set_outputs(b.type(0));
  return std::make_unique<RangeOp>(b.type(0), b.where());
}

std::unique_ptr<Op> make_expand(OpBuild& b) { return make_repeat<ExpandOp>(b, "shape"); }
std::unique_ptr<Op> make_tile(OpBuild& b) { return make_repeat<TileOp>(b, "repeats"); }

std::unique_ptr<Op> make_split(OpBuild& b) {
  allow_attributes(b, {"axis", "split", "num_outputs"});
  b.check(!is_4bit(b.type(0)), "4-bit data cannot be split");
  const size_t n = b.node.outputs.size();
  b.check(n >= 1, "expects at least one output");
  std::vector<int64_t> split_attr = b.node.attr_ints("split");
  const bool has_split_attr = b.node.attr("split") != nullptr;
  if (b.has_input(1)) {
    b.require_type(1, {DType::kI64}, "split");
    b.check(!has_split_attr, "both the 'split' input and attribute are given");
  }
  const bool has_num = b.node.attr("num_outputs") != nullptr;
  if (has_num) {
    const int64_t num = b.node.attr_int("num_outputs", 0);
    b.check(!b.has_input(1) && !has_split_attr, "attribute 'num_outputs' given together with 'split'");
    b.check(num == static_cast<int64_t>(n), "attribute 'num_outputs' = ", num, " but the node has ", n,
            " outputs");
  }
  b.set_outputs(b.type(0));
  return std::make_unique<SplitOp>(b.where(), b.node.attr_int("axis", 0), std::move(split_attr), has_num, n);
}

}  // namespace nbits::ops
