// Comparisons (Equal, Less, Greater, LessOrEqual, GreaterOrEqual: float, int64, int32, and bool
// for Equal), logic (And, Or, Xor, Not on bool), IsNaN / IsInf and Where. Binary and ternary ops broadcast
// like numpy; bool is one byte per element, 0 or 1.
#include <cmath>
#include <cstring>

#include "ops/op_util.h"
#include "ops/ops.h"

namespace nbits::ops {
namespace {

using graph::OpArgs;
using graph::RunContext;

enum class CmpKind { kEqual, kLess, kGreater, kLessEq, kGreaterEq, kAnd, kOr, kXor };

constexpr bool is_logic(CmpKind k) { return k == CmpKind::kAnd || k == CmpKind::kOr || k == CmpKind::kXor; }

template <CmpKind K, typename T>
inline bool compare(T a, T b) {
  if constexpr (K == CmpKind::kEqual) return a == b;
  if constexpr (K == CmpKind::kLess) return a < b;
  if constexpr (K == CmpKind::kGreater) return a > b;
  if constexpr (K == CmpKind::kLessEq) return a <= b;
  if constexpr (K == CmpKind::kGreaterEq) return a >= b;
  if constexpr (K == CmpKind::kAnd) return (a != 0) && (b != 0);
  if constexpr (K == CmpKind::kOr) return (a != 0) || (b != 0);
  if constexpr (K == CmpKind::kXor) return (a != 0) != (b != 0);
}

template <CmpKind K>
class CompareOp final : public Op {
 public:
  CompareOp(DType t, std::string where) : type_(t), where_(std::move(where)) {}
  void infer(const OpArgs& a) const override {
    a.out[0]->shape = broadcast_shapes(a.in[0]->shape, a.in[1]->shape, where_);
  }
  void run(const OpArgs& a, RunContext& ctx) const override {
    dispatch_type(type_, [&](auto t) { run_typed<decltype(t)>(a, ctx); });
  }

 private:
  template <typename T>
  void run_typed(const OpArgs& a, RunContext& ctx) const {
    const Tensor &ta = *a.in[0], &tb = *a.in[1];
    Tensor& ty = *a.out[0];
    const T* x = ta.as<const T>();
    const T* z = tb.as<const T>();
    uint8_t* y = ty.as<uint8_t>();
    ctx.pool.parallel_range(ty.numel(), 8192, [&](int64_t s, int64_t e) {
      broadcast_walk<2>(ty.shape, {&ta.shape, &tb.shape}, s, e,
                        [&](int64_t i, const int64_t* o) { y[i] = compare<K>(x[o[0]], z[o[1]]); });
    });
  }
  DType type_;
  std::string where_;
};

template <CmpKind K>
std::unique_ptr<Op> make_compare(OpBuild& b) {
  allow_attributes(b, {});
  b.check(b.node.inputs.size() == 2 && b.has_input(0) && b.has_input(1), "expects 2 inputs");
  if constexpr (is_logic(K)) {
    b.require_type(0, {DType::kBool}, "A");
  } else if constexpr (K == CmpKind::kEqual) {
    b.require_type(0, {DType::kF32, DType::kI64, DType::kI32, DType::kBool}, "A");
  } else {
    b.require_type(0, {DType::kF32, DType::kI64, DType::kI32}, "A");
  }
  b.check(b.type(1) == b.type(0), "inputs have different dtypes ", graph::dtype_name(b.type(0)), " and ",
          graph::dtype_name(b.type(1)));
  b.set_outputs(DType::kBool);
  return std::make_unique<CompareOp<K>>(b.type(0), b.where());
}

class NotOp final : public Op {
 public:
  void infer(const OpArgs& a) const override { a.out[0]->shape = a.in[0]->shape; }
  void run(const OpArgs& a, RunContext&) const override {
    const uint8_t* x = a.in[0]->as<const uint8_t>();
    uint8_t* y = a.out[0]->as<uint8_t>();
    for (int64_t i = 0; i < a.in[0]->numel(); ++i) y[i] = x[i] == 0;
  }
};

// IsNaN, IsInf (detect_positive / detect_negative): float in, bool out.
class FloatClassOp final : public Op {
 public:
  FloatClassOp(bool nan, bool pos, bool neg) : nan_(nan), pos_(pos), neg_(neg) {}
  void infer(const OpArgs& a) const override { a.out[0]->shape = a.in[0]->shape; }
  void run(const OpArgs& a, RunContext&) const override {
    const float* x = a.in[0]->as<const float>();
    uint8_t* y = a.out[0]->as<uint8_t>();
    for (int64_t i = 0, n = a.in[0]->numel(); i < n; ++i) {
      const float v = x[i];
      y[i] = nan_ ? std::isnan(v) : std::isinf(v) && (v > 0 ? pos_ : neg_);
    }
  }

 private:
  bool nan_, pos_, neg_;
};

class WhereOp final : public Op {
 public:
  WhereOp(size_t elem, std::string where) : elem_(elem), where_(std::move(where)) {}
  void infer(const OpArgs& a) const override {
    a.out[0]->shape =
        broadcast_shapes(broadcast_shapes(a.in[0]->shape, a.in[1]->shape, where_), a.in[2]->shape, where_);
  }
  void run(const OpArgs& a, RunContext& ctx) const override {
    // Where only moves elements: dispatch on their size.
    if (elem_ == 8) return select<uint64_t>(a, ctx);
    if (elem_ == 4) return select<uint32_t>(a, ctx);
    return select<uint8_t>(a, ctx);
  }

 private:
  template <typename T>
  void select(const OpArgs& a, RunContext& ctx) const {
    const Tensor &tc = *a.in[0], &tx = *a.in[1], &tz = *a.in[2];
    Tensor& ty = *a.out[0];
    const uint8_t* c = tc.as<const uint8_t>();
    const T* x = tx.as<const T>();
    const T* z = tz.as<const T>();
    T* y = ty.as<T>();
    ctx.pool.parallel_range(ty.numel(), 8192, [&](int64_t s, int64_t e) {
      broadcast_walk<3>(ty.shape, {&tc.shape, &tx.shape, &tz.shape}, s, e,
                        [&](int64_t i, const int64_t* o) { y[i] = c[o[0]] ? x[o[1]] : z[o[2]]; });
    });
  }
  size_t elem_;
  std::string where_;
};

}  // namespace

std::unique_ptr<Op> make_equal(OpBuild& b) { return make_compare<CmpKind::kEqual>(b); }
std::unique_ptr<Op> make_less(OpBuild& b) { return make_compare<CmpKind::kLess>(b); }
std::unique_ptr<Op> make_greater(OpBuild& b) { return make_compare<CmpKind::kGreater>(b); }
std::unique_ptr<Op> make_less_or_equal(OpBuild& b) { return make_compare<CmpKind::kLessEq>(b); }
std::unique_ptr<Op> make_greater_or_equal(OpBuild& b) { return make_compare<CmpKind::kGreaterEq>(b); }
std::unique_ptr<Op> make_and(OpBuild& b) { return make_compare<CmpKind::kAnd>(b); }
std::unique_ptr<Op> make_or(OpBuild& b) { return make_compare<CmpKind::kOr>(b); }
std::unique_ptr<Op> make_xor(OpBuild& b) { return make_compare<CmpKind::kXor>(b); }

std::unique_ptr<Op> make_not(OpBuild& b) {
  allow_attributes(b, {});
  b.require_type(0, {DType::kBool}, "X");
  b.set_outputs(DType::kBool);
  return std::make_unique<NotOp>();
}

std::unique_ptr<Op> make_is_nan(OpBuild& b) {
  allow_attributes(b, {});
  b.require_type(0, {DType::kF32}, "X");
  b.set_outputs(DType::kBool);
  return std::make_unique<FloatClassOp>(true, false, false);
}

std::unique_ptr<Op> make_is_inf(OpBuild& b) {
  allow_attributes(b, {"detect_positive", "detect_negative"});
  b.require_type(0, {DType::kF32}, "X");
  b.set_outputs(DType::kBool);
  return std::make_unique<FloatClassOp>(false, b.node.attr_int("detect_positive", 1) != 0,
                                        b.node.attr_int("detect_negative", 1) != 0);
}

std::unique_ptr<Op> make_where(OpBuild& b) {
  allow_attributes(b, {});
  b.check(b.node.inputs.size() == 3 && b.has_input(0) && b.has_input(1) && b.has_input(2),
          "expects 3 inputs (condition, X, Y)");
  b.require_type(0, {DType::kBool}, "condition");
  b.require_type(1, {DType::kF32, DType::kI64, DType::kI32, DType::kBool}, "X");
  b.check(b.type(2) == b.type(1), "X and Y have different dtypes ", graph::dtype_name(b.type(1)), " and ",
          graph::dtype_name(b.type(2)));
  b.set_outputs(b.type(1));
  return std::make_unique<WhereOp>(graph::dtype_size(b.type(1)), b.where());
}

}  // namespace nbits::ops
