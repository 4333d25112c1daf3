// ai.onnx DequantizeLinear (opsets 10-21): y = (x - zero_point) * scale for
// int8/uint8/int4/uint4/int32 x, per tensor (scalar scale), per axis (1-D
// scale along `axis`) or block-wise (scale of x's rank, `block_size` along
// `axis`). The general path: a constant x is folded at load; MatMul over a
// block-wise constant is packed instead (graph/rewrites.h fuse_dequantize_matmul).
#include "ops/op_util.h"
#include "ops/ops.h"

namespace nbits::ops {
namespace {

using graph::OpArgs;
using graph::RunContext;

int element(const Tensor& t, int64_t i) {
  const auto* p = static_cast<const uint8_t*>(t.data);
  switch (t.dtype) {
    case DType::kI8:
      return static_cast<int8_t>(p[i]);
    case DType::kU8:
      return p[i];
    case DType::kI32:
      return static_cast<const int32_t*>(t.data)[i];
    case DType::kU4:
      return (p[i / 2] >> (4 * (i % 2))) & 15;
    case DType::kI4: {
      const int v = (p[i / 2] >> (4 * (i % 2))) & 15;
      return v >= 8 ? v - 16 : v;
    }
    default:
      NBITS_ASSERT(false);
  }
}

class DequantizeLinearOp final : public Op {
 public:
  DequantizeLinearOp(std::string where, int64_t axis, int64_t block)
      : where_(std::move(where)), axis_(axis), block_(block) {}
  void infer(const OpArgs& a) const override {
    const Shape& x = a.in[0]->shape;
    const Shape& s = a.in[1]->shape;
    const int ax = scale_axis(x, s);
    if (ax >= 0) {
      if (block_ > 0) {
        NBITS_CHECK(s.rank == x.rank, where_, ": block-wise scale ", s.str(), " must have x's rank ",
                    x.str());
        for (int d = 0; d < x.rank; ++d)
          NBITS_CHECK(d == ax ? s[d] == (x[d] + block_ - 1) / block_ : s[d] == x[d], where_, ": scale ",
                      s.str(), " does not fit x ", x.str(), " with block_size ", block_, " on axis ", ax);
      } else {
        NBITS_CHECK(s.rank == 1 && s[0] == x[ax], where_, ": per-axis scale ", s.str(), " must be [", x[ax],
                    "]");
      }
    }
    if (const Tensor* z = a.input(2))
      NBITS_CHECK(z->shape == s, where_, ": zero_point ", z->shape.str(), " and scale ", s.str(), " differ");
    a.out[0]->shape = x;
  }
  void run(const OpArgs& a, RunContext&) const override {
    const Tensor& x = *a.in[0];
    const float* scale = a.in[1]->as<const float>();
    const Tensor* zp = a.input(2);
    float* y = a.out[0]->as<float>();
    const Shape& s = x.shape;
    const int64_t n = x.numel();
    const int ax_ = scale_axis(s, a.in[1]->shape);
    const int64_t inner = ax_ < 0 ? 1 : dims_product(s, ax_ + 1, s.rank), dim = ax_ < 0 ? 1 : s[ax_];
    for (int64_t i = 0; i < n; ++i) {
      int64_t q = 0;  // index into scale / zero_point
      if (ax_ >= 0) {
        const int64_t outer = i / (inner * dim), d = (i / inner) % dim, in = i % inner;
        q = block_ > 0 ? (outer * ((dim + block_ - 1) / block_) + d / block_) * inner + in : d;
      }
      y[i] = static_cast<float>(element(x, i) - (zp ? element(*zp, q) : 0)) * scale[q];
    }
  }

 private:
  std::string where_;
  int64_t axis_, block_;

  // The axis the scales run along; -1 for one per-tensor scale.
  int scale_axis(const Shape& x, const Shape& s) const {
    return s.numel() == 1 && block_ == 0 ? -1 : normalize_axis(axis_, x.rank, where_);
  }
};

}  // namespace

std::unique_ptr<Op> make_dequantize_linear(OpBuild& b) {
  const onnx::Node& n = b.node;
  b.check(b.has_input(0) && b.has_input(1), "needs x and x_scale");
  b.require_type(0, {DType::kI8, DType::kU8, DType::kI4, DType::kU4, DType::kI32}, "x");
  b.require_type(1, {DType::kF32}, "x_scale");
  if (b.has_input(2)) b.check(b.type(2) == b.type(0), "x_zero_point must have x's dtype");
  b.check(n.attr_int("output_dtype", 0) == 0, "attribute output_dtype is not supported");
  const int64_t block = n.attr_int("block_size", 0);
  b.check(block >= 0, "block_size=", block, " must be >= 0");
  b.set_outputs(DType::kF32);
  return std::make_unique<DequantizeLinearOp>(b.where(), n.attr_int("axis", 1), block);
}

}  // namespace nbits::ops
