// Elementwise ops: Add, Sub, Mul, Div (numpy broadcasting; float, int64,
// int32), Sigmoid, Cast.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/vector_ops.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace nbits::ops {
namespace {

enum class BinKind { kAdd, kSub, kMul, kDiv };

template <BinKind K, typename T>
inline T apply(T a, T b) {
  if constexpr (K == BinKind::kAdd) return a + b;
  if constexpr (K == BinKind::kSub) return a - b;
  if constexpr (K == BinKind::kMul) return a * b;
  if constexpr (K == BinKind::kDiv) return a / b;
}

template <BinKind K>
constexpr kernels::VecOp vec_op() {
  if constexpr (K == BinKind::kAdd) return kernels::VecOp::kAdd;
  if constexpr (K == BinKind::kSub) return kernels::VecOp::kSub;
  if constexpr (K == BinKind::kMul) return kernels::VecOp::kMul;
  return kernels::VecOp::kDiv;
}

// float fast paths (SIMD helpers): same shape, one scalar side, a row vector; false if none applies.
template <BinKind K>
bool binary_f32(const Tensor& ta, const Tensor& tb, Tensor& ty, ThreadPool& pool) {
  const float* a = ta.as<const float>();
  const float* b = tb.as<const float>();
  float* y = ty.as<float>();
  const int64_t n = ty.numel(), na = ta.numel(), nb = tb.numel();
  constexpr kernels::VecOp op = vec_op<K>();
  if (na == n && nb == n) {
    pool.parallel_range(n, 16384,
                        [&](int64_t s, int64_t e) { kernels::vec_binary(op, a + s, b + s, y + s, e - s); });
  } else if (na == n && nb == 1) {
    pool.parallel_range(n, 16384, [&](int64_t s, int64_t e) {
      kernels::vec_binary_scalar(op, a + s, b[0], false, y + s, e - s);
    });
  } else if (nb == n && na == 1) {
    pool.parallel_range(n, 16384, [&](int64_t s, int64_t e) {
      kernels::vec_binary_scalar(op, b + s, a[0], true, y + s, e - s);
    });
  } else if (na == n && ty.shape.rank > 0 && nb == ty.shape[ty.shape.rank - 1] &&
             tb.shape[tb.shape.rank - 1] == nb && nb > 0) {  // row vector (bias)
    pool.parallel_range(n / nb, std::max<int64_t>(1, 16384 / nb), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) kernels::vec_binary(op, a + r * nb, b, y + r * nb, nb);
    });
  } else {
    return false;
  }
  return true;
}

template <BinKind K, typename T>
void binary(const Tensor& ta, const Tensor& tb, Tensor& ty, ThreadPool& pool, const std::string& where) {
  const T* a = ta.as<const T>();
  const T* b = tb.as<const T>();
  T* y = ty.as<T>();
  const int64_t n = ty.numel();
  if constexpr (K == BinKind::kDiv && !std::is_floating_point_v<T>) {
    for (int64_t i = 0; i < tb.numel(); ++i) NBITS_CHECK(b[i] != 0, where, ": integer division by zero");
  }
  if constexpr (std::is_same_v<T, float>) {
    if (binary_f32<K>(ta, tb, ty, pool)) return;
  }
  if (ta.numel() == n && tb.numel() == n) {
    pool.parallel_range(n, 4096, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) y[i] = apply<K>(a[i], b[i]);
    });
    return;
  }
  if (tb.numel() == 1 && ta.numel() == n) {
    const T bv = b[0];
    for (int64_t i = 0; i < n; ++i) y[i] = apply<K>(a[i], bv);
    return;
  }
  if (ta.numel() == n && ty.shape.rank > 0 && tb.numel() == ty.shape[ty.shape.rank - 1] &&
      tb.shape[tb.shape.rank - 1] == tb.numel()) {  // row vector (bias)
    const int64_t w = tb.numel();
    for (int64_t r = 0; r < n / w; ++r)
      for (int64_t j = 0; j < w; ++j) y[r * w + j] = apply<K>(a[r * w + j], b[j]);
    return;
  }
  // General broadcast: walk the output index.
  const int rank = ty.shape.rank;
  int64_t sa[Shape::kMaxRank], sb[Shape::kMaxRank], idx[Shape::kMaxRank] = {};
  broadcast_strides(ta.shape, rank, sa);
  broadcast_strides(tb.shape, rank, sb);
  int64_t ia = 0, ib = 0;
  for (int64_t i = 0; i < n; ++i) {
    y[i] = apply<K>(a[ia], b[ib]);
    for (int d = rank - 1; d >= 0; --d) {
      ia += sa[d];
      ib += sb[d];
      if (++idx[d] < ty.shape[d]) break;
      ia -= sa[d] * idx[d];
      ib -= sb[d] * idx[d];
      idx[d] = 0;
    }
  }
}

template <BinKind K>
class BinaryOp final : public Op {
 public:
  BinaryOp(DType t, std::string where) : type_(t), where_(std::move(where)) {}
  void infer(const graph::OpArgs& a) const override {
    a.out[0]->shape = broadcast_shapes(a.in[0]->shape, a.in[1]->shape, where_);
  }
  void run(const graph::OpArgs& a, graph::RunContext& ctx) const override {
    switch (type_) {
      case DType::kF32:
        return binary<K, float>(*a.in[0], *a.in[1], *a.out[0], ctx.pool, where_);
      case DType::kI64:
        return binary<K, int64_t>(*a.in[0], *a.in[1], *a.out[0], ctx.pool, where_);
      case DType::kI32:
        return binary<K, int32_t>(*a.in[0], *a.in[1], *a.out[0], ctx.pool, where_);
      default:
        NBITS_ASSERT(false);
    }
  }

 private:
  DType type_;
  std::string where_;
};

template <BinKind K>
std::unique_ptr<Op> make_binary(OpBuild& b) {
  b.check(b.node.inputs.size() == 2 && b.has_input(0) && b.has_input(1), "expects 2 inputs");
  b.require_type(0, {DType::kF32, DType::kI64, DType::kI32}, "A");
  b.check(b.type(1) == b.type(0), "inputs have different dtypes ", graph::dtype_name(b.type(0)), " and ",
          graph::dtype_name(b.type(1)));
  b.set_outputs(b.type(0));
  return std::make_unique<BinaryOp<K>>(b.type(0), b.where());
}

class SigmoidOp final : public Op {
 public:
  void infer(const graph::OpArgs& a) const override { a.out[0]->shape = a.in[0]->shape; }
  void run(const graph::OpArgs& a, graph::RunContext& ctx) const override {
    const float* x = a.in[0]->as<const float>();
    float* y = a.out[0]->as<float>();
    ctx.pool.parallel_range(a.in[0]->numel(), 8192,
                            [&](int64_t s, int64_t e) { kernels::vec_sigmoid(x + s, y + s, e - s); });
  }
};

// The fused SwiGLU: y = (g * sigmoid(g)) * u, bitwise what Sigmoid + Mul + Mul give.
class SiluMulOp final : public Op {
 public:
  explicit SiluMulOp(std::string where) : where_(std::move(where)) {}
  void infer(const graph::OpArgs& a) const override {
    NBITS_CHECK(a.in[0]->shape == a.in[1]->shape, where_, ": gate ", a.in[0]->shape.str(), " and up ",
                a.in[1]->shape.str(), " differ");
    a.out[0]->shape = a.in[0]->shape;
  }
  void run(const graph::OpArgs& a, graph::RunContext& ctx) const override {
    const float* g = a.in[0]->as<const float>();
    const float* u = a.in[1]->as<const float>();
    float* y = a.out[0]->as<float>();
    ctx.pool.parallel_range(a.in[0]->numel(), 8192,
                            [&](int64_t s, int64_t e) { kernels::vec_silu_mul(g + s, u + s, y + s, e - s); });
  }
  const char* kernel_name(const graph::OpArgs&) const override { return "silu_mul"; }

 private:
  std::string where_;
};

class CastOp final : public Op {
 public:
  CastOp(DType from, DType to) : from_(from), to_(to) {}
  void infer(const graph::OpArgs& a) const override { a.out[0]->shape = a.in[0]->shape; }
  void run(const graph::OpArgs& a, graph::RunContext&) const override {
    const Tensor& x = *a.in[0];
    Tensor& y = *a.out[0];
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n; ++i) {
      if (is_float_type(from_)) {
        const float v = load_float(x.data, from_, i);
        if (is_float_type(to_)) {
          store_float(y.data, to_, i, v);
        } else {
          store_int(y.data, i, to_ == DType::kBool ? (v != 0.0f) : static_cast<int64_t>(v));
        }
      } else {
        const int64_t v = load_int(x.data, i);
        if (is_float_type(to_)) {
          store_float(y.data, to_, i, static_cast<float>(v));
        } else {
          store_int(y.data, i, to_ == DType::kBool ? (v != 0) : v);
        }
      }
    }
  }

 private:
  int64_t load_int(const void* p, int64_t i) const {
    switch (from_) {
      case DType::kI64:
        return static_cast<const int64_t*>(p)[i];
      case DType::kI32:
        return static_cast<const int32_t*>(p)[i];
      case DType::kI8:
        return static_cast<const int8_t*>(p)[i];
      case DType::kU8:
      case DType::kBool:
        return static_cast<const uint8_t*>(p)[i];
      default:
        NBITS_ASSERT(false);
    }
  }
  void store_int(void* p, int64_t i, int64_t v) const {
    switch (to_) {
      case DType::kI64:
        static_cast<int64_t*>(p)[i] = v;
        return;
      case DType::kI32:
        static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v);
        return;
      case DType::kI8:
        static_cast<int8_t*>(p)[i] = static_cast<int8_t>(v);
        return;
      case DType::kU8:
      case DType::kBool:
        static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v);
        return;
      default:
        NBITS_ASSERT(false);
    }
  }
  DType from_, to_;
};

bool castable(DType t) { return t != DType::kU4 && t != DType::kI4; }

}  // namespace

std::unique_ptr<Op> make_add(OpBuild& b) { return make_binary<BinKind::kAdd>(b); }
std::unique_ptr<Op> make_sub(OpBuild& b) { return make_binary<BinKind::kSub>(b); }
std::unique_ptr<Op> make_mul(OpBuild& b) { return make_binary<BinKind::kMul>(b); }
std::unique_ptr<Op> make_div(OpBuild& b) { return make_binary<BinKind::kDiv>(b); }

std::unique_ptr<Op> make_sigmoid(OpBuild& b) {
  b.require_type(0, {DType::kF32}, "X");
  b.set_outputs(DType::kF32);
  return std::make_unique<SigmoidOp>();
}

std::unique_ptr<Op> make_silu_mul(OpBuild& b) {
  b.check(b.node.inputs.size() == 2 && b.has_input(0) && b.has_input(1), "expects 2 inputs (gate, up)");
  b.require_type(0, {DType::kF32}, "gate");
  b.require_type(1, {DType::kF32}, "up");
  b.set_outputs(DType::kF32);
  return std::make_unique<SiluMulOp>(b.where());
}

namespace {

// `exact`: the storage dtype as written (the session's boundary conversions);
// otherwise a float target is the compute dtype (fp16/bf16 -> fp32).
std::unique_ptr<Op> make_cast_to(OpBuild& b, bool exact) {
  const onnx::Attribute* to = b.node.attr("to");
  b.check(to != nullptr, "missing required attribute 'to'");
  const auto dt = graph::to_dtype(static_cast<onnx::DataType>(to->i));
  b.check(dt.has_value() && castable(*dt), "attribute 'to' = ", to->i, " (",
          onnx::data_type_name(static_cast<onnx::DataType>(to->i)), ") is not a supported dtype");
  b.check(castable(b.type(0)), "input dtype ", graph::dtype_name(b.type(0)), " is not supported");
  const DType out = exact ? *dt : graph::compute_dtype(*dt);
  b.set_outputs(out);
  return std::make_unique<CastOp>(b.type(0), out);
}

}  // namespace

std::unique_ptr<Op> make_cast(OpBuild& b) { return make_cast_to(b, false); }
std::unique_ptr<Op> make_storage_cast(OpBuild& b) { return make_cast_to(b, true); }

}  // namespace nbits::ops
