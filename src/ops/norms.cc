// Norms: RMS (SimplifiedLayerNormalization, com.microsoft SkipSimplifiedLayerNormalization) and
// mean/variance (ai.onnx LayerNormalization, com.microsoft SkipLayerNormalization); fp32, fp16
// weights converted at load.
#include <algorithm>
#include <cmath>
#include <cstring>

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
  void infer(const OpArgs& a) const override {
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
  void run(const OpArgs& a, RunContext& ctx) const override {
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
  void infer(const OpArgs& a) const override {
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
  void run(const OpArgs& a, RunContext& ctx) const override {
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

// LayerNormalization of one row of n floats, ORT's CPU numerics: sequential fp32 sums of x and
// x^2, var = E[x^2] - mean^2, y = (x - mean) / sqrt(var + eps) * gamma (+ beta). y may alias x.
inline void layer_norm_row(const float* x, const float* gamma, const float* beta, float eps, int64_t n,
                           float* y, float* mean_out, float* inv_out) {
  float mean = 0.0f, msq = 0.0f;
  for (int64_t h = 0; h < n; ++h) {
    mean += x[h];
    msq += x[h] * x[h];
  }
  const float nf = static_cast<float>(n);
  mean = mean / nf;
  const float denom = std::sqrt(msq / nf - mean * mean + eps);
  if (beta) {
    for (int64_t h = 0; h < n; ++h) y[h] = (x[h] - mean) / denom * gamma[h] + beta[h];
  } else {
    for (int64_t h = 0; h < n; ++h) y[h] = (x[h] - mean) / denom * gamma[h];
  }
  if (mean_out) *mean_out = mean;
  if (inv_out) *inv_out = 1.0f / denom;
}

// A per-element parameter input (scale, bias): fp32 is read at run (constant or not); an fp16/bf16
// constant is widened once at load.
struct ParamInput {
  size_t index = 0;
  bool present = false;
  std::vector<float> widened;
  const float* get(const OpArgs& a) const {
    if (!present) return nullptr;
    return widened.empty() ? a.in[index]->as<const float>() : widened.data();
  }
  int64_t size(const OpArgs& a) const {
    return widened.empty() ? a.in[index]->numel() : static_cast<int64_t>(widened.size());
  }
};

ParamInput param_input(OpBuild& b, size_t i, const char* what) {
  ParamInput p;
  p.index = i;
  p.present = b.has_input(i);
  if (!p.present) return p;
  b.require_type(i, {DType::kF32, DType::kF16, DType::kBF16}, what);
  if (b.type(i) != DType::kF32) p.widened = to_float_vector(b.constant(i, what));
  return p;
}

// Shape of Mean / InvStdDev: X's dims before `axis`, then 1s.
Shape stats_shape(const Shape& s, int axis) {
  Shape r = s;
  for (int d = axis; d < s.rank; ++d) r[d] = 1;
  return r;
}

class LayerNormOp final : public Op {
 public:
  LayerNormOp(std::string where, int64_t axis, float eps, ParamInput scale, ParamInput bias)
      : where_(std::move(where)), axis_(axis), eps_(eps), scale_(std::move(scale)), bias_(std::move(bias)) {}
  void infer(const OpArgs& a) const override {
    const Shape& s = a.in[0]->shape;
    const int ax = normalize_axis(axis_, s.rank, where_);
    const int64_t n = dims_product(s, ax, s.rank);
    NBITS_CHECK(scale_.size(a) == n && (!bias_.present || bias_.size(a) == n), where_,
                ": Scale and B must have X.shape[axis:] = ", n, " elements (X ", s.str(), ")");
    a.out[0]->shape = s;
    for (size_t i = 1; i < a.n_out; ++i)
      if (a.out[i]) a.out[i]->shape = stats_shape(s, ax);
  }
  void run(const OpArgs& a, RunContext& ctx) const override {
    const Shape& s = a.in[0]->shape;
    const int ax = normalize_axis(axis_, s.rank, where_);
    const int64_t n = dims_product(s, ax, s.rank), rows = dims_product(s, 0, ax);
    const float* x = a.in[0]->as<const float>();
    const float *gamma = scale_.get(a), *beta = bias_.get(a);
    float* y = a.out[0]->as<float>();
    float* mean = a.output(1) ? a.output(1)->as<float>() : nullptr;
    float* inv = a.output(2) ? a.output(2)->as<float>() : nullptr;
    if (n == 0) return;
    ctx.pool.parallel_range(rows, 16, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        layer_norm_row(x + r * n, gamma, beta, eps_, n, y + r * n, mean ? mean + r : nullptr,
                       inv ? inv + r : nullptr);
    });
  }

 private:
  std::string where_;
  int64_t axis_;
  float eps_;
  ParamInput scale_, bias_;
};

// com.microsoft SkipLayerNormalization: s = input + skip (+ bias); output = LayerNorm(s) * gamma
// (+ beta) over the last axis; optional outputs mean, inv_std_var ([..., 1]) and s. skip is
// input-shaped or a suffix of it (broadcast over the leading dims, as ORT's offset % skip size).
class SkipLayerNormOp final : public Op {
 public:
  SkipLayerNormOp(std::string where, float eps, ParamInput gamma, ParamInput beta, ParamInput bias)
      : where_(std::move(where)),
        eps_(eps),
        gamma_(std::move(gamma)),
        beta_(std::move(beta)),
        bias_(std::move(bias)) {}
  void infer(const OpArgs& a) const override {
    const Shape& s = a.in[0]->shape;
    NBITS_CHECK(s.rank >= 1, where_, ": input must have rank >= 1");
    const int64_t n = s[s.rank - 1];
    NBITS_CHECK(gamma_.size(a) == n && (!beta_.present || beta_.size(a) == n) &&
                    (!bias_.present || bias_.size(a) == n),
                where_, ": gamma, beta and bias must have the hidden size ", n, " of input ", s.str());
    const Shape& k = a.in[1]->shape;
    // Leading 1s of skip broadcast; the rest must be the input's trailing dims.
    int lead = 0;
    while (lead < k.rank - 1 && k[lead] == 1) ++lead;
    bool suffix = k.rank >= 1 && k.rank - lead <= s.rank;
    for (int d = lead; suffix && d < k.rank; ++d) suffix = k[d] == s[s.rank - (k.rank - d)];
    NBITS_CHECK(suffix && k[k.rank - 1] == n, where_, ": skip ", k.str(), " does not match input ", s.str());
    a.out[0]->shape = s;
    for (size_t i = 1; i < a.n_out; ++i)
      if (a.out[i]) a.out[i]->shape = i == 3 ? s : stats_shape(s, s.rank - 1);
  }
  void run(const OpArgs& a, RunContext& ctx) const override {
    const int64_t n = a.in[0]->shape[a.in[0]->shape.rank - 1];
    if (n == 0) return;
    const int64_t rows = a.in[0]->numel() / n, skip_size = a.in[1]->numel();
    const float* x = a.in[0]->as<const float>();
    const float* skip = a.in[1]->as<const float>();
    const float *gamma = gamma_.get(a), *beta = beta_.get(a), *bias = bias_.get(a);
    float* y = a.out[0]->as<float>();
    float* mean = a.output(1) ? a.output(1)->as<float>() : nullptr;
    float* inv = a.output(2) ? a.output(2)->as<float>() : nullptr;
    float* sum_out = a.output(3) ? a.output(3)->as<float>() : nullptr;
    ctx.pool.parallel_range(rows, 16, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        float* yr = y + r * n;
        kernels::vec_binary(kernels::VecOp::kAdd, x + r * n, skip + (r * n) % skip_size, yr, n);
        if (bias) kernels::vec_binary(kernels::VecOp::kAdd, yr, bias, yr, n);
        if (sum_out) std::memcpy(sum_out + r * n, yr, static_cast<size_t>(n) * sizeof(float));
        layer_norm_row(yr, gamma, beta, eps_, n, yr, mean ? mean + r : nullptr, inv ? inv + r : nullptr);
      }
    });
  }

 private:
  std::string where_;
  float eps_;
  ParamInput gamma_, beta_, bias_;
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

std::unique_ptr<Op> make_layer_norm(OpBuild& b) {
  allow_attributes(b, {"axis", "epsilon", "stash_type"});
  b.require_type(0, {DType::kF32}, "X");
  b.check(b.has_input(1), "missing required input 1 (Scale)");
  const int64_t stash = b.node.attr_int("stash_type", 1);
  b.check(stash == 1, "attribute 'stash_type' = ", stash, " is not supported (only 1, float)");
  ParamInput scale = param_input(b, 1, "Scale"), bias = param_input(b, 2, "B");
  b.set_outputs(DType::kF32);
  return std::make_unique<LayerNormOp>(b.where(), b.node.attr_int("axis", -1),
                                       b.node.attr_float("epsilon", 1e-5f), std::move(scale),
                                       std::move(bias));
}

std::unique_ptr<Op> make_skip_layer_norm(OpBuild& b) {
  allow_attributes(b, {"epsilon"});
  b.require_type(0, {DType::kF32}, "input");
  b.require_type(1, {DType::kF32}, "skip");
  b.check(b.has_input(2), "missing required input 2 (gamma)");
  ParamInput gamma = param_input(b, 2, "gamma"), beta = param_input(b, 3, "beta"),
             bias = param_input(b, 4, "bias");
  b.set_outputs(DType::kF32);
  // ORT's schema default epsilon (kDefaultSkipLayerNormEpsilon).
  return std::make_unique<SkipLayerNormOp>(b.where(), b.node.attr_float("epsilon", 1e-12f), std::move(gamma),
                                           std::move(beta), std::move(bias));
}

}  // namespace nbits::ops
