// DynamicQuantizeLinear (opset 11): x (float) -> y (uint8), y_scale (float scalar), y_zero_point
// (uint8 scalar), as ONNX Runtime computes it (core/util/qmath.h GetQuantizationParameter and
// MlasQuantizeLinear): the range [min(0, min x), max(0, max x)] is mapped onto [0, 255],
// scale = (max - min) / 255 (1 when the range is empty: all zeros, or no element),
// zero_point = round_half_even(clamp(0 - min / scale, 0, 255)),
// y = clamp(round_half_even(x / scale) + zero_point, 0, 255). quantize_dynamic's int8 decoders
// (model_int8.onnx, model_quantized.onnx) put one in front of every MatMulInteger.
#include <algorithm>
#include <cmath>

#include "ops/op_util.h"
#include "ops/ops.h"

namespace nbits::ops {
namespace {

// Round half to even in the default floating-point environment (std::nearbyint), as ORT's
// RoundHalfToEven and cvtps2dq do.
inline float round_half_even(float v) { return std::nearbyint(v); }

void dynamic_quantize_params(const float* x, int64_t n, float& scale, uint8_t& zero_point) {
  float lo = 0.0f, hi = 0.0f;  // the range always includes 0
  for (int64_t i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
  const float zp = 0.0f - lo / scale;
  zero_point = static_cast<uint8_t>(round_half_even(std::max(0.0f, std::min(255.0f, zp))));
}

void dynamic_quantize_apply(const float* x, int64_t n, float scale, uint8_t zero_point, uint8_t* y) {
  const float lo = -static_cast<float>(zero_point), hi = 255.0f - static_cast<float>(zero_point);
  for (int64_t i = 0; i < n; ++i) {
    const float q = std::min(hi, std::max(lo, x[i] / scale));  // NaN -> lo (max(lo, NaN) is lo)
    y[i] = static_cast<uint8_t>(static_cast<int>(round_half_even(q)) + zero_point);
  }
}

using graph::OpArgs;
using graph::RunContext;

class DynamicQuantizeLinearOp final : public Op {
 public:
  explicit DynamicQuantizeLinearOp(std::string where) : where_(std::move(where)) {}
  void infer(const OpArgs& a) const override {
    a.out[0]->shape = a.in[0]->shape;
    if (Tensor* s = a.output(1)) s->shape = Shape{};
    if (Tensor* z = a.output(2)) z->shape = Shape{};
  }
  void run(const OpArgs& a, RunContext& ctx) const override {
    const Tensor& x = *a.in[0];
    const int64_t n = x.numel();
    float scale = 1.0f;
    uint8_t zp = 0;
    dynamic_quantize_params(x.as<const float>(), n, scale, zp);
    if (Tensor* s = a.output(1)) *s->as<float>() = scale;
    if (Tensor* z = a.output(2)) *z->as<uint8_t>() = zp;
    const float* px = x.as<const float>();
    uint8_t* py = a.out[0]->as<uint8_t>();
    ctx.pool.parallel_range(n, 16384, [&](int64_t i0, int64_t i1) {
      dynamic_quantize_apply(px + i0, i1 - i0, scale, zp, py + i0);
    });
  }

 private:
  std::string where_;
};

}  // namespace

std::unique_ptr<Op> make_dynamic_quantize_linear(OpBuild& b) {
  allow_attributes(b, {});
  b.require_type(0, {DType::kF32}, "x");
  b.check(b.node.outputs.size() <= 3, "expected at most 3 outputs, got ", b.node.outputs.size());
  b.out_types = {DType::kU8, DType::kF32, DType::kU8};
  b.out_types.resize(b.node.outputs.size());
  return std::make_unique<DynamicQuantizeLinearOp>(b.where());
}

}  // namespace nbits::ops
