// ReduceSum, ReduceMean, ReduceMax (axes as attribute before opset 18, as input from 18; keepdims;
// noop_with_empty_axes) and Softmax (opset 13+: one axis, default -1; before 13: the input
// seen as 2-D [prod(dims < axis), prod(dims >= axis)], default axis 1).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/vector_ops.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace nbits::ops {
namespace {

using graph::OpArgs;
using graph::RunContext;

enum class RedKind { kSum, kMean, kMax };

template <RedKind K, typename T>
constexpr T red_init() {
  if constexpr (K == RedKind::kMax) {
    return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                : std::numeric_limits<T>::lowest();
  }
  return T(0);
}

template <RedKind K, typename T>
inline T red_step(T acc, T v) {
  if constexpr (K == RedKind::kMax) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(v)) return v;
    }
    return acc < v ? v : acc;
  }
  return acc + v;
}

template <RedKind K, typename T>
inline T red_finish(T acc, int64_t count) {
  if constexpr (K == RedKind::kMean) return count > 0 ? acc / static_cast<T>(count) : acc;
  return acc;
}

template <RedKind K>
class ReduceOp final : public Op {
 public:
  ReduceOp(std::string where, DType t, std::vector<int64_t> axes, bool keepdims, bool noop_empty)
      : where_(std::move(where)),
        type_(t),
        axes_(std::move(axes)),
        keepdims_(keepdims),
        noop_empty_(noop_empty) {}
  void infer(const OpArgs& a) const override {
    const Shape& in = a.in[0]->shape;
    Axes red;
    reduced(a, in.rank, red);
    Shape s;
    for (int i = 0; i < in.rank; ++i) {
      if (!red.on[i])
        s.push_back(in[i]);
      else if (keepdims_)
        s.push_back(1);
    }
    a.out[0]->shape = s;
  }
  void run(const OpArgs& a, RunContext& ctx) const override {
    Axes red;
    reduced(a, a.in[0]->shape.rank, red);
    dispatch_type(type_, [&](auto t) { reduce<decltype(t)>(red, *a.in[0], *a.out[0], ctx); });
  }

 private:
  struct Axes {
    bool on[Shape::kMaxRank] = {};
  };
  // Which axes this run reduces.
  void reduced(const OpArgs& a, int rank, Axes& red) const {
    bool* reduced_axis = red.on;
    const Tensor* t = a.input(1);
    const int64_t n = t ? t->numel() : static_cast<int64_t>(axes_.size());
    std::fill(reduced_axis, reduced_axis + Shape::kMaxRank, n == 0 && !noop_empty_);
    for (int64_t i = 0; i < n; ++i)
      reduced_axis[normalize_axis(t ? read_int(*t, i) : axes_[i], rank, where_)] = true;
  }
  template <typename T>
  void reduce(const Axes& red, const Tensor& x, Tensor& y, RunContext& ctx) const {
    const bool* reduced_axis = red.on;
    const int rank = x.shape.rank;
    const T* px = x.as<const T>();
    T* py = y.as<T>();
    int first = rank;  // reduced axes [first, rank) when they are a trailing block
    while (first > 0 && reduced_axis[first - 1]) --first;
    bool trailing = true;
    for (int d = 0; d < first; ++d) trailing = trailing && !reduced_axis[d];
    if (trailing) {
      const int64_t inner = dims_product(x.shape, first, rank), rows = dims_product(x.shape, 0, first);
      ctx.pool.parallel_range(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(inner, 1)),
                              [&](int64_t r0, int64_t r1) {
                                for (int64_t r = r0; r < r1; ++r) {
                                  T acc = red_init<K, T>();
                                  for (int64_t i = 0; i < inner; ++i)
                                    acc = red_step<K>(acc, px[r * inner + i]);
                                  py[r] = red_finish<K>(acc, inner);
                                }
                              });
      return;
    }
    // General case: walk the input, output strides 0 on reduced axes.
    int64_t ost[Shape::kMaxRank], idx[Shape::kMaxRank] = {};
    int64_t s = 1, count = 1;
    for (int i = rank - 1; i >= 0; --i) {
      ost[i] = reduced_axis[i] ? 0 : s;
      if (!reduced_axis[i]) s *= x.shape[i];
      if (reduced_axis[i]) count *= x.shape[i];
    }
    std::fill(py, py + y.numel(), red_init<K, T>());
    int64_t o = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      py[o] = red_step<K>(py[o], px[i]);
      for (int d = rank - 1; d >= 0; --d) {
        o += ost[d];
        if (++idx[d] < x.shape[d]) break;
        o -= ost[d] * idx[d];
        idx[d] = 0;
      }
    }
    for (int64_t j = 0; j < y.numel(); ++j) py[j] = red_finish<K>(py[j], count);
  }
  std::string where_;
  DType type_;
  std::vector<int64_t> axes_;
  bool keepdims_, noop_empty_;
};

template <RedKind K>
std::unique_ptr<Op> make_reduce(OpBuild& b) {
  allow_attributes(b, {"axes", "keepdims", "noop_with_empty_axes"});
  b.require_type(0, {DType::kF32, DType::kI64, DType::kI32}, "data");
  if (b.has_input(1)) {
    b.require_type(1, {DType::kI64, DType::kI32}, "axes");
    b.check(b.node.attr("axes") == nullptr, "both the 'axes' input (opset >= 18) and attribute are given");
  }
  b.set_outputs(b.type(0));
  return std::make_unique<ReduceOp<K>>(b.where(), b.type(0), b.node.attr_ints("axes"),
                                       b.node.attr_int("keepdims", 1) != 0,
                                       b.node.attr_int("noop_with_empty_axes", 0) != 0);
}

class SoftmaxOp final : public Op {
 public:
  SoftmaxOp(std::string where, int64_t axis, bool flatten)
      : where_(std::move(where)), axis_(axis), flatten_(flatten) {}
  void infer(const OpArgs& a) const override {
    normalize_axis(axis_, a.in[0]->shape.rank, where_);
    a.out[0]->shape = a.in[0]->shape;
  }
  void run(const OpArgs& a, RunContext& ctx) const override {
    const Shape& s = a.in[0]->shape;
    const int ax = normalize_axis(axis_, s.rank, where_);
    const int64_t outer = dims_product(s, 0, ax);
    const int64_t n = flatten_ ? dims_product(s, ax, s.rank) : s[ax];
    const int64_t inner = flatten_ ? 1 : dims_product(s, ax + 1, s.rank);
    const float* x = a.in[0]->as<const float>();
    float* y = a.out[0]->as<float>();
    if (n == 0 || outer * inner == 0) return;
    if (inner == 1) {
      ctx.pool.parallel_range(outer, std::max<int64_t>(1, 4096 / n), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          std::memcpy(y + r * n, x + r * n, static_cast<size_t>(n) * sizeof(float));
          kernels::vec_softmax(y + r * n, n);
        }
      });
      return;
    }
    // Axis not last: columns of stride `inner`.
    ctx.pool.parallel_range(outer * inner, 64, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        const int64_t base = (c / inner) * n * inner + c % inner;
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t i = 0; i < n; ++i) m = std::max(m, x[base + i * inner]);
        float sum = 0.0f;
        for (int64_t i = 0; i < n; ++i) sum += (y[base + i * inner] = std::exp(x[base + i * inner] - m));
        const float inv = 1.0f / sum;
        for (int64_t i = 0; i < n; ++i) y[base + i * inner] *= inv;
      }
    });
  }

 private:
  std::string where_;
  int64_t axis_;
  bool flatten_;
};

}  // namespace

std::unique_ptr<Op> make_reduce_sum(OpBuild& b) { return make_reduce<RedKind::kSum>(b); }
std::unique_ptr<Op> make_reduce_mean(OpBuild& b) { return make_reduce<RedKind::kMean>(b); }
std::unique_ptr<Op> make_reduce_max(OpBuild& b) { return make_reduce<RedKind::kMax>(b); }

std::unique_ptr<Op> make_softmax(OpBuild& b) {
  allow_attributes(b, {"axis"});
  b.require_type(0, {DType::kF32}, "input");
  b.set_outputs(DType::kF32);
  const bool before13 = b.opset > 0 && b.opset < 13;
  return std::make_unique<SoftmaxOp>(b.where(), b.node.attr_int("axis", before13 ? 1 : -1), before13);
}

}  // namespace nbits::ops
