// Unary math (Neg, Sqrt, Reciprocal, Tanh, Erf, Exp, Log, Abs, Cos, Sin, Relu), Pow, variadic
// Min/Max (numpy broadcasting) and the Gelu family: ai.onnx Gelu (opset 20), com.microsoft Gelu,
// FastGelu, BiasGelu, QuickGelu. Floats are fp32 (the session widens fp16/bf16 at load).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/vector_ops.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace nbits::ops {
namespace {

using graph::OpArgs;
using graph::RunContext;

enum class UnKind { kNeg, kSqrt, kReciprocal, kTanh, kErf, kExp, kLog, kAbs, kCos, kSin, kRelu };

// Kinds defined for the integer types too (ONNX: Neg, Abs, Relu).
constexpr bool takes_ints(UnKind k) { return k == UnKind::kNeg || k == UnKind::kAbs || k == UnKind::kRelu; }

template <UnKind K, typename T>
inline T unary(T x) {
  if constexpr (K == UnKind::kNeg) return -x;
  if constexpr (K == UnKind::kAbs) return x < 0 ? -x : x;
  if constexpr (K == UnKind::kRelu) return x > 0 ? x : T(0);
  if constexpr (std::is_same_v<T, float>) {
    if constexpr (K == UnKind::kSqrt) return std::sqrt(x);
    if constexpr (K == UnKind::kReciprocal) return 1.0f / x;
    if constexpr (K == UnKind::kTanh) return std::tanh(x);
    if constexpr (K == UnKind::kErf) return std::erf(x);
    if constexpr (K == UnKind::kExp) return std::exp(x);
    if constexpr (K == UnKind::kLog) return std::log(x);
    if constexpr (K == UnKind::kCos) return std::cos(x);
    if constexpr (K == UnKind::kSin) return std::sin(x);
  }
  return x;
}

template <UnKind K>
class UnaryOp final : public Op {
 public:
  explicit UnaryOp(DType t) : type_(t) {}
  void infer(const OpArgs& a) const override { a.out[0]->shape = a.in[0]->shape; }
  void run(const OpArgs& a, RunContext& ctx) const override {
    dispatch_type(type_, [&](auto t) { run_typed<decltype(t)>(a, ctx); });
  }

 private:
  template <typename T>
  void run_typed(const OpArgs& a, RunContext& ctx) const {
    const T* x = a.in[0]->as<const T>();
    T* y = a.out[0]->as<T>();
    ctx.pool.parallel_range(a.in[0]->numel(), 8192, [&](int64_t s, int64_t e) {
      if constexpr (K == UnKind::kExp && std::is_same_v<T, float>) {
        kernels::vec_exp(x + s, y + s, e - s);
      } else {
        for (int64_t i = s; i < e; ++i) y[i] = unary<K, T>(x[i]);
      }
    });
  }
  DType type_;
};

template <UnKind K>
std::unique_ptr<Op> make_unary(OpBuild& b) {
  allow_attributes(b, {});
  if constexpr (takes_ints(K)) {
    b.require_type(0, {DType::kF32, DType::kI64, DType::kI32}, "X");
  } else {
    b.require_type(0, {DType::kF32}, "X");
  }
  b.set_outputs(b.type(0));
  return std::make_unique<UnaryOp<K>>(b.type(0));
}

// Pow(X, Y): float base, float/int64/int32 exponent. A single-element exponent of 2 is x * x
// and of 0.5 is sqrt(x) (as ORT's fast paths); integer exponents are applied in double (as
// std::pow(float, int64) in ORT).
class PowOp final : public Op {
 public:
  PowOp(DType exp_type, std::string where) : exp_type_(exp_type), where_(std::move(where)) {}
  void infer(const OpArgs& a) const override {
    a.out[0]->shape = broadcast_shapes(a.in[0]->shape, a.in[1]->shape, where_);
  }
  void run(const OpArgs& a, RunContext& ctx) const override {
    const Tensor &tx = *a.in[0], &te = *a.in[1];
    Tensor& ty = *a.out[0];
    const float* x = tx.as<const float>();
    float* y = ty.as<float>();
    const int64_t n = ty.numel();
    if (te.numel() == 1 && tx.numel() == n) {
      const bool is_float = exp_type_ == DType::kF32;
      const double e = is_float ? te.as<const float>()[0] : static_cast<double>(read_int(te, 0));
      ctx.pool.parallel_range(n, 8192, [&](int64_t s, int64_t t) {
        if (e == 2.0) {
          for (int64_t i = s; i < t; ++i) y[i] = x[i] * x[i];
        } else if (e == 0.5) {
          for (int64_t i = s; i < t; ++i) y[i] = std::sqrt(x[i]);
        } else if (is_float) {
          const float ef = static_cast<float>(e);
          for (int64_t i = s; i < t; ++i) y[i] = std::pow(x[i], ef);
        } else {
          for (int64_t i = s; i < t; ++i) y[i] = static_cast<float>(std::pow(static_cast<double>(x[i]), e));
        }
      });
      return;
    }
    ctx.pool.parallel_range(n, 8192, [&](int64_t s, int64_t t) {
      broadcast_walk<2>(ty.shape, {&tx.shape, &te.shape}, s, t, [&](int64_t i, const int64_t* o) {
        if (exp_type_ == DType::kF32) {
          y[i] = std::pow(x[o[0]], te.as<const float>()[o[1]]);
        } else {
          y[i] = static_cast<float>(
              std::pow(static_cast<double>(x[o[0]]), static_cast<double>(read_int(te, o[1]))));
        }
      });
    });
  }

 private:
  DType exp_type_;
  std::string where_;
};

// Variadic Min / Max with NaN propagation (numpy's minimum/maximum).
template <bool kMax>
class MinMaxOp final : public Op {
 public:
  MinMaxOp(DType t, std::string where) : type_(t), where_(std::move(where)) {}
  void infer(const OpArgs& a) const override {
    Shape s = a.in[0]->shape;
    for (size_t i = 1; i < a.n_in; ++i) s = broadcast_shapes(s, a.in[i]->shape, where_);
    a.out[0]->shape = s;
  }
  void run(const OpArgs& a, RunContext& ctx) const override {
    dispatch_type(type_, [&](auto t) { run_typed<decltype(t)>(a, ctx); });
  }

 private:
  template <typename T>
  static T pick(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(b)) return b;
    }
    if constexpr (kMax) return a < b ? b : a;
    return b < a ? b : a;
  }
  template <typename T>
  void run_typed(const OpArgs& a, RunContext& ctx) const {
    Tensor& ty = *a.out[0];
    T* y = ty.as<T>();
    ctx.pool.parallel_range(ty.numel(), 8192, [&](int64_t s, int64_t e) {
      const T* x0 = a.in[0]->as<const T>();
      broadcast_walk<1>(ty.shape, {&a.in[0]->shape}, s, e,
                        [&](int64_t i, const int64_t* o) { y[i] = x0[o[0]]; });
      for (size_t k = 1; k < a.n_in; ++k) {
        const T* xk = a.in[k]->as<const T>();
        broadcast_walk<1>(ty.shape, {&a.in[k]->shape}, s, e,
                          [&](int64_t i, const int64_t* o) { y[i] = pick(y[i], xk[o[0]]); });
      }
    });
  }
  DType type_;
  std::string where_;
};

template <bool kMax>
std::unique_ptr<Op> make_min_max(OpBuild& b) {
  allow_attributes(b, {});
  b.check(!b.node.inputs.empty(), "expects at least one input");
  b.require_type(0, {DType::kF32, DType::kI64, DType::kI32}, "data_0");
  for (size_t i = 1; i < b.node.inputs.size(); ++i)
    b.check(b.has_input(i) && b.type(i) == b.type(0), "input ", i, " is missing or has another dtype than ",
            graph::dtype_name(b.type(0)));
  b.set_outputs(b.type(0));
  return std::make_unique<MinMaxOp<kMax>>(b.type(0), b.where());
}

// ---- Gelu family --------------------------------------------------------------------------

enum class GeluKind {
  kErf,    // 0.5 x (1 + erf(x / sqrt(2)))
  kTanh,   // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
  kQuick,  // x sigmoid(alpha x)
};

// y = gelu(x + bias) over rows of `n` (bias: nullptr or n floats broadcast over the last axis).
class GeluOp final : public Op {
 public:
  GeluOp(GeluKind k, float alpha, std::string where) : kind_(k), alpha_(alpha), where_(std::move(where)) {}
  void infer(const OpArgs& a) const override {
    const Shape& s = a.in[0]->shape;
    if (const Tensor* bias = a.input(1)) {
      NBITS_CHECK(bias->shape.rank == 1 && s.rank >= 1 && bias->shape[0] == s[s.rank - 1], where_, ": bias ",
                  bias->shape.str(), " does not match the last axis of input ", s.str());
    }
    a.out[0]->shape = s;
  }
  void run(const OpArgs& a, RunContext& ctx) const override {
    const float* x = a.in[0]->as<const float>();
    const float* bias = a.input(1) ? a.input(1)->as<const float>() : nullptr;
    float* y = a.out[0]->as<float>();
    const int64_t numel = a.in[0]->numel();
    if (!bias) {
      ctx.pool.parallel_range(numel, 8192, [&](int64_t s, int64_t e) { row(x + s, nullptr, y + s, e - s); });
      return;
    }
    const int64_t n = a.input(1)->numel();
    if (numel == 0 || n == 0) return;
    ctx.pool.parallel_range(numel / n, std::max<int64_t>(1, 8192 / n), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) row(x + r * n, bias, y + r * n, n);
    });
  }

 private:
  void row(const float* x, const float* bias, float* y, int64_t n) const {
    // Long rows go in cache-sized pieces.
    constexpr int64_t kPiece = 4096;
    for (int64_t p = 0; p < n; p += kPiece) {
      const int64_t m = std::min(kPiece, n - p);
      const float* xp = x + p;
      float* yp = y + p;
      if (bias) {
        kernels::vec_binary(kernels::VecOp::kAdd, xp, bias + p, yp, m);
        xp = yp;
      }
      switch (kind_) {
        case GeluKind::kErf:
          for (int64_t i = 0; i < m; ++i)
            yp[i] = 0.5f * xp[i] * (1.0f + std::erf(xp[i] * 0.70710678118654752f));
          break;
        case GeluKind::kTanh:
          for (int64_t i = 0; i < m; ++i) {
            const float v = xp[i];
            yp[i] = 0.5f * v * (1.0f + std::tanh(0.79788456080286536f * (v + 0.044715f * v * v * v)));
          }
          break;
        case GeluKind::kQuick: {
          // x * sigmoid(alpha x): the sigmoid goes through y first (y may hold x + bias).
          float sig[kPiece];
          for (int64_t i = 0; i < m; ++i) sig[i] = alpha_ * xp[i];
          kernels::vec_sigmoid(sig, sig, m);
          for (int64_t i = 0; i < m; ++i) yp[i] = xp[i] * sig[i];
          break;
        }
      }
    }
  }
  GeluKind kind_;
  float alpha_;
  std::string where_;
};

std::unique_ptr<Op> make_gelu_op(OpBuild& b, GeluKind k, bool bias_input, bool bias_required, float alpha) {
  b.require_type(0, {DType::kF32}, "X");
  const size_t max_in = bias_input ? 2 : 1;
  b.check(b.node.inputs.size() <= max_in, "expects at most ", max_in, " inputs, got ", b.node.inputs.size());
  if (bias_required) b.check(b.has_input(1), "missing required input 1 (bias)");
  if (b.has_input(1)) b.require_type(1, {DType::kF32}, "bias");
  b.set_outputs(DType::kF32);
  return std::make_unique<GeluOp>(k, alpha, b.where());
}

}  // namespace

std::unique_ptr<Op> make_neg(OpBuild& b) { return make_unary<UnKind::kNeg>(b); }
std::unique_ptr<Op> make_sqrt(OpBuild& b) { return make_unary<UnKind::kSqrt>(b); }
std::unique_ptr<Op> make_reciprocal(OpBuild& b) { return make_unary<UnKind::kReciprocal>(b); }
std::unique_ptr<Op> make_tanh(OpBuild& b) { return make_unary<UnKind::kTanh>(b); }
std::unique_ptr<Op> make_erf(OpBuild& b) { return make_unary<UnKind::kErf>(b); }
std::unique_ptr<Op> make_exp(OpBuild& b) { return make_unary<UnKind::kExp>(b); }
std::unique_ptr<Op> make_log(OpBuild& b) { return make_unary<UnKind::kLog>(b); }
std::unique_ptr<Op> make_abs(OpBuild& b) { return make_unary<UnKind::kAbs>(b); }
std::unique_ptr<Op> make_cos(OpBuild& b) { return make_unary<UnKind::kCos>(b); }
std::unique_ptr<Op> make_sin(OpBuild& b) { return make_unary<UnKind::kSin>(b); }
std::unique_ptr<Op> make_relu(OpBuild& b) { return make_unary<UnKind::kRelu>(b); }
std::unique_ptr<Op> make_min(OpBuild& b) { return make_min_max<false>(b); }
std::unique_ptr<Op> make_max(OpBuild& b) { return make_min_max<true>(b); }

std::unique_ptr<Op> make_pow(OpBuild& b) {
  allow_attributes(b, {});
  b.check(b.node.inputs.size() == 2 && b.has_input(0) && b.has_input(1), "expects 2 inputs (X, Y)");
  b.require_type(0, {DType::kF32}, "X");
  b.require_type(1, {DType::kF32, DType::kI64, DType::kI32}, "Y");
  b.set_outputs(DType::kF32);
  return std::make_unique<PowOp>(b.type(1), b.where());
}

std::unique_ptr<Op> make_onnx_gelu(OpBuild& b) {
  allow_attributes(b, {"approximate"});
  const std::string approx = b.node.attr_string("approximate", "none");
  b.check(approx == "none" || approx == "tanh", "attribute 'approximate' = '", approx,
          "' is not supported (expected none or tanh)");
  return make_gelu_op(b, approx == "tanh" ? GeluKind::kTanh : GeluKind::kErf, false, false, 0.0f);
}

std::unique_ptr<Op> make_ms_gelu(OpBuild& b) {
  allow_attributes(b, {});
  return make_gelu_op(b, GeluKind::kErf, false, false, 0.0f);
}

std::unique_ptr<Op> make_fast_gelu(OpBuild& b) {
  allow_attributes(b, {});
  return make_gelu_op(b, GeluKind::kTanh, true, false, 0.0f);
}

std::unique_ptr<Op> make_bias_gelu(OpBuild& b) {
  allow_attributes(b, {});
  return make_gelu_op(b, GeluKind::kErf, true, true, 0.0f);
}

std::unique_ptr<Op> make_quick_gelu(OpBuild& b) {
  allow_attributes(b, {"alpha"});
  return make_gelu_op(b, GeluKind::kQuick, false, false, b.node.attr_float("alpha", 1.702f));
}

}  // namespace nbits::ops
