// RMS norms: SimplifiedLayerNormalization and com.microsoft
// SkipSimplifiedLayerNormalization (fp32; fp16 weights converted at load).
#include <algorithm>
#include <cmath>

#include "kernels/vector_ops.h"
#include "ops/op_util.h"
#include "ops/ops.h"
#include "ops/vec_math.h"

namespace nbits::ops {
namespace {

using graph::OpArgs;
using graph::RunContext;

// Rows [r0, r1) of x (n floats each): y = x / sqrt(mean(x^2) + eps) * gamma, inv[r] = 1/denominator
// when inv is given. The sums of squares are sequential fp32 per row (as ORT's kernel and llama2.c),
// computed 8 rows at a time.
inline void rms_norm_rows(const float* x, const float* gamma, float eps, int64_t n, int64_t r0, int64_t r1,
                          float* y, float* inv) {
  float ss[8];
  for (int64_t g = r0; g < r1; g += 8) {
    const int64_t m = std::min<int64_t>(8, r1 - g);
    kernels::vec_sum_squares_rows(x + g * n, m, n, ss);
    for (int64_t k = 0; k < m; ++k) {
      const float v = 1.0f / std::sqrt(ss[k] / static_cast<float>(n) + eps);
      scale_by(x + (g + k) * n, v, gamma, y + (g + k) * n, n);
      if (inv) inv[g + k] = v;
    }
  }
}

class SimplifiedLayerNormOp final : public Op {
 public:
  SimplifiedLayerNormOp(std::string where, std::vector<float> gamma, float eps)
      : where_(std::move(where)), gamma_(std::move(gamma)), eps_(eps) {}
  void infer(const OpArgs& a) override {
    const Shape& s = a.in[0]->shape;
    NBITS_CHECK(s.rank >= 1 && s[s.rank - 1] == static_cast<int64_t>(gamma_.size()), where_, ": input ",
                s.str(), " does not end in the scale's size ", gamma_.size());
    a.out[0]->shape = s;
    if (Tensor* inv = a.output(1)) {
      Shape is = s;
      is[s.rank - 1] = 1;
      inv->shape = is;
    }
  }
  void run(const OpArgs& a, RunContext& ctx) override {
    const int64_t n = static_cast<int64_t>(gamma_.size()), rows = a.in[0]->numel() / n;
    const float* x = a.in[0]->as<const float>();
    float* y = a.out[0]->as<float>();
    float* inv = a.output(1) ? a.output(1)->as<float>() : nullptr;
    ctx.pool.parallel_range(
        rows, 16, [&](int64_t r0, int64_t r1) { rms_norm_rows(x, gamma_.data(), eps_, n, r0, r1, y, inv); });
  }

 private:
  std::string where_;
  std::vector<float> gamma_;
  float eps_;
};

class SkipSimplifiedLayerNormOp final : public Op {
 public:
  SkipSimplifiedLayerNormOp(std::string where, std::vector<float> gamma, std::vector<float> bias, float eps)
      : where_(std::move(where)), gamma_(std::move(gamma)), bias_(std::move(bias)), eps_(eps) {}
  void infer(const OpArgs& a) override {
    const Shape& s = a.in[0]->shape;
    const int64_t n = static_cast<int64_t>(gamma_.size());
    NBITS_CHECK(s.rank >= 1 && s[s.rank - 1] == n, where_, ": input ", s.str(),
                " does not end in gamma's size ", n);
    const int64_t sk = a.in[1]->numel();
    NBITS_CHECK(a.in[1]->shape == s || sk == n, where_, ": skip ", a.in[1]->shape.str(),
                " does not match input ", s.str());
    for (size_t i = 0; i < a.n_out; ++i)
      if (a.out[i]) a.out[i]->shape = s;
  }
  void run(const OpArgs& a, RunContext& ctx) override {
    const int64_t n = static_cast<int64_t>(gamma_.size()), rows = a.in[0]->numel() / n;
    const bool skip_row = a.in[1]->numel() == n && rows > 1;
    const float* x = a.in[0]->as<const float>();
    const float* skip = a.in[1]->as<const float>();
    float* y = a.out[0]->as<float>();
    float* sum_out = a.output(3) ? a.output(3)->as<float>() : nullptr;
    // The residual sum goes to output 3 when requested, else into y first (then normalized in place).
    float* sum = sum_out ? sum_out : y;
    ctx.pool.parallel_range(rows, 16, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        float* s = sum + r * n;
        kernels::vec_binary(kernels::VecOp::kAdd, x + r * n, skip + (skip_row ? 0 : r * n), s, n);
        if (!bias_.empty()) kernels::vec_binary(kernels::VecOp::kAdd, s, bias_.data(), s, n);
      }
      rms_norm_rows(sum, gamma_.data(), eps_, n, r0, r1, y, nullptr);
    });
  }

 private:
  std::string where_;
  std::vector<float> gamma_, bias_;
  float eps_;
};

std::vector<float> weight(OpBuild& b, size_t i, const char* what) {
  const Tensor& t = b.constant(i, what);
  b.require_type(i, {DType::kF32, DType::kF16, DType::kBF16}, what);
  b.check(t.shape.rank == 1, what, " must be 1-D, got ", t.shape.str());
  return to_float_vector(t);
}

}  // namespace

std::unique_ptr<Op> make_simplified_layer_norm(OpBuild& b) {
  b.require_type(0, {DType::kF32}, "X");
  const int64_t axis = b.node.attr_int("axis", -1);
  b.check(axis == -1, "only axis=-1 is supported (got ", axis, ")");
  std::vector<float> gamma = weight(b, 1, "scale");
  b.set_outputs(DType::kF32);
  return std::make_unique<SimplifiedLayerNormOp>(b.where(), std::move(gamma),
                                                 b.node.attr_float("epsilon", 1e-5f));
}

std::unique_ptr<Op> make_skip_simplified_layer_norm(OpBuild& b) {
  b.require_type(0, {DType::kF32}, "input");
  b.require_type(1, {DType::kF32}, "skip");
  b.check(!b.node.has_output(1) && !b.node.has_output(2),
          "outputs 1 (mean) and 2 (inv_std_var) are not computed on CPU; leave them empty");
  std::vector<float> gamma = weight(b, 2, "gamma");
  std::vector<float> bias;
  // Schema: input 3 is the optional bias (ORT's CPU kernel reads index 4; the builder passes neither).
  for (size_t i : {size_t{3}, size_t{4}})
    if (b.has_input(i)) {
      b.check(bias.empty(), "both inputs 3 and 4 given as bias");
      bias = weight(b, i, "bias");
      b.check(bias.size() == gamma.size(), "bias has ", bias.size(), " elements, gamma ", gamma.size());
    }
  b.set_outputs(DType::kF32);
  return std::make_unique<SkipSimplifiedLayerNormOp>(b.where(), std::move(gamma), std::move(bias),
                                                     b.node.attr_float("epsilon", 1e-5f));
}

}  // namespace nbits::ops
