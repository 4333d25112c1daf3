// Index ops of torch.onnx.export's decoders: Trilu (causal masks from torch.triu / tril), ScatterND
// (slice assignment `mask[..., :n] = ...`), GatherElements (torch.gather) and CumSum (position ids
// from attention_mask.cumsum). Trilu, GatherElements and ScatterND without reduction move elements
// of dtype_size bytes (any dtype); ScatterND reductions and CumSum compute in float, int64 or int32.
// Indices may be negative (counted from the end); out-of-range indices are refused by name.
#include <cstring>
#include <limits>

#include "ops/op_util.h"
#include "ops/ops.h"

namespace nbits::ops {
namespace {

using graph::OpArgs;
using graph::RunContext;

// Typed element pointers for the arithmetic ops (float, int64, int32).
template <typename F>
void dispatch_arith(DType t, F&& f) {
  switch (t) {
    case DType::kI64:
      return f(int64_t{});
    case DType::kI32:
      return f(int32_t{});
    default:
      return f(float{});
  }
}

// ---- Trilu --------------------------------------------------------------------------------------
// y[..., i, j] = x[..., i, j] where j - i >= k (upper) / j - i <= k (lower), else 0. k is int64
// and may be anything: j - i stays within (-rows, cols), so no arithmetic here can overflow.
class TriluOp final : public Op {
 public:
  TriluOp(std::string where, bool upper) : where_(std::move(where)), upper_(upper) {}
  void infer(const OpArgs& a) const override {
    const Tensor& x = *a.in[0];
    NBITS_CHECK(x.shape.rank >= 2, where_, ": input must have rank >= 2, got ", x.shape.str());
    if (const Tensor* k = a.input(1))
      NBITS_CHECK(k->numel() == 1, where_, ": k must hold one value, got shape ", k->shape.str());
    a.out[0]->shape = x.shape;
  }
  void run(const OpArgs& a, RunContext& ctx) const override {
    const Tensor& x = *a.in[0];
    Tensor& y = *a.out[0];
    const int64_t k = a.input(1) ? read_int(*a.input(1), 0) : 0;
    const int r = x.shape.rank;
    const int64_t rows = x.shape[r - 2], cols = x.shape[r - 1];
    const int64_t mats = dims_product(x.shape, 0, r - 2);
    const size_t es = graph::dtype_size(x.dtype);
    if (x.numel() == 0) return;
    const auto* src = static_cast<const uint8_t*>(x.data);
    auto* dst = static_cast<uint8_t*>(y.data);
    ctx.pool.parallel_range(mats * rows, std::max<int64_t>(1, 4096 / cols), [&](int64_t r0, int64_t r1) {
      for (int64_t rr = r0; rr < r1; ++rr) {
        const int64_t i = rr % rows;
        // Kept columns: upper j >= i + k, lower j <= i + k, clamped to [0, cols] without forming i + k.
        int64_t lo = 0, hi = cols;  // keep [lo, hi)
        if (upper_) {
          lo = k <= -i ? 0 : (k >= cols - i ? cols : i + k);
        } else {
          hi = k < -i ? 0 : (k >= cols - i ? cols : i + k + 1);
        }
        const uint8_t* s = src + static_cast<size_t>(rr * cols) * es;
        uint8_t* d = dst + static_cast<size_t>(rr * cols) * es;
        std::memset(d, 0, static_cast<size_t>(cols) * es);
        if (hi > lo) std::memcpy(d + lo * es, s + lo * es, static_cast<size_t>(hi - lo) * es);
      }
    });
  }

 private:
  std::string where_;
  bool upper_;
};

// ---- GatherElements ---------------------------------------------------------------------------
// y[i0..i(r-1)] = x[i0.., idx[i0..], ..] with the index replacing coordinate `axis`; y has the
// shape of the indices, each dim of which (but axis) must not exceed x's.
class GatherElementsOp final : public Op {
 public:
  GatherElementsOp(std::string where, int64_t axis) : where_(std::move(where)), axis_(axis) {}
  void infer(const OpArgs& a) const override {
    const Shape &x = a.in[0]->shape, &idx = a.in[1]->shape;
    NBITS_CHECK(x.rank == idx.rank, where_, ": data ", x.str(), " and indices ", idx.str(),
                " must have the same rank");
    NBITS_CHECK(x.rank >= 1, where_, ": data must have rank >= 1");
    const int ax = normalize_axis(axis_, x.rank, where_);
    for (int d = 0; d < x.rank; ++d)
      NBITS_CHECK(d == ax || idx[d] <= x[d], where_, ": indices ", idx.str(), " exceed data ", x.str(),
                  " on axis ", d);
    a.out[0]->shape = idx;
  }
  void run(const OpArgs& a, RunContext&) const override {
    const Tensor &x = *a.in[0], &idx = *a.in[1];
    Tensor& y = *a.out[0];
    const int rank = x.shape.rank;
    const int ax = normalize_axis(axis_, rank, where_);
    const int64_t n = idx.numel();
    if (n == 0) return;
    int64_t xst[Shape::kMaxRank], c[Shape::kMaxRank] = {};
    int64_t st = 1;
    for (int d = rank - 1; d >= 0; --d) {
      xst[d] = st;
      st *= x.shape[d];
    }
    const int64_t dim = x.shape[ax];
    const size_t es = graph::dtype_size(x.dtype);
    const auto* src = static_cast<const uint8_t*>(x.data);
    auto* dst = static_cast<uint8_t*>(y.data);
    int64_t base = 0;  // offset in x of coordinates c with c[ax] = 0
    for (int64_t i = 0; i < n; ++i) {
      int64_t k = read_int(idx, i);
      NBITS_CHECK(k >= -dim && k < dim, where_, ": index ", k, " out of range [", -dim, ", ", dim, ")");
      if (k < 0) k += dim;
      std::memcpy(dst + static_cast<size_t>(i) * es, src + static_cast<size_t>(base + k * xst[ax]) * es, es);
      for (int d = rank - 1; d >= 0; --d) {
        if (d != ax) base += xst[d];
        if (++c[d] < idx.shape[d]) break;
        if (d != ax) base -= xst[d] * c[d];
        c[d] = 0;
      }
    }
  }

 private:
  std::string where_;
  int64_t axis_;
};

// ---- ScatterND ----------------------------------------------------------------------------------
enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

class ScatterNDOp final : public Op {
 public:
  ScatterNDOp(std::string where, Reduction red) : where_(std::move(where)), red_(red) {}
  void infer(const OpArgs& a) const override {
    const Shape &x = a.in[0]->shape, &idx = a.in[1]->shape, &upd = a.in[2]->shape;
    NBITS_CHECK(idx.rank >= 1, where_, ": indices must have rank >= 1");
    const int64_t q = idx[idx.rank - 1];
    NBITS_CHECK(q >= 1 && q <= x.rank, where_, ": indices' last dim ", q, " must be in [1, ", x.rank,
                "] (data rank)");
    // updates shape = indices.shape[:-1] + data.shape[q:]
    Shape want;
    for (int d = 0; d < idx.rank - 1; ++d) want.push_back(idx[d]);
    for (int d = static_cast<int>(q); d < x.rank; ++d) want.push_back(x[d]);
    NBITS_CHECK(upd == want, where_, ": updates ", upd.str(), " must have shape ", want.str(), " (indices ",
                idx.str(), ", data ", x.str(), ")");
    a.out[0]->shape = x;
  }
  void run(const OpArgs& a, RunContext&) const override {
    const Tensor &x = *a.in[0], &idx = *a.in[1], &upd = *a.in[2];
    Tensor& y = *a.out[0];
    const size_t es = graph::dtype_size(x.dtype);
    if (y.data != x.data && x.numel() > 0) std::memcpy(y.data, x.data, x.bytes());
    const int q = static_cast<int>(idx.shape[idx.shape.rank - 1]);
    const int64_t n = idx.numel() / q;  // index tuples
    const int64_t slice = dims_product(x.shape, q, x.shape.rank);
    int64_t st[Shape::kMaxRank];
    int64_t s = slice;
    for (int d = q - 1; d >= 0; --d) {
      st[d] = s;
      s *= x.shape[d];
    }
    for (int64_t t = 0; t < n; ++t) {
      int64_t off = 0;
      for (int d = 0; d < q; ++d) {
        int64_t k = read_int(idx, t * q + d);
        const int64_t dim = x.shape[d];
        NBITS_CHECK(k >= -dim && k < dim, where_, ": index ", k, " out of range [", -dim, ", ", dim,
                    ") on data axis ", d);
        if (k < 0) k += dim;
        off += k * st[d];
      }
      if (slice == 0) continue;
      if (red_ == Reduction::kNone) {
        std::memcpy(static_cast<uint8_t*>(y.data) + static_cast<size_t>(off) * es,
                    static_cast<const uint8_t*>(upd.data) + static_cast<size_t>(t * slice) * es,
                    static_cast<size_t>(slice) * es);
        continue;
      }
      dispatch_arith(x.dtype, [&](auto z) {
        using T = decltype(z);
        T* py = y.as<T>() + off;
        const T* pu = upd.as<const T>() + t * slice;
        for (int64_t e = 0; e < slice; ++e) py[e] = reduce<T>(py[e], pu[e]);
      });
    }
  }

 private:
  template <typename T>
  T reduce(T a, T b) const {
    switch (red_) {
      case Reduction::kAdd:
        return a + b;
      case Reduction::kMul:
        return a * b;
      case Reduction::kMax:
        return a < b ? b : a;
      case Reduction::kMin:
        return b < a ? b : a;
      default:
        return b;
    }
  }
  std::string where_;
  Reduction red_;
};

// ---- CumSum -------------------------------------------------------------------------------------
class CumSumOp final : public Op {
 public:
  CumSumOp(std::string where, DType t, bool exclusive, bool reverse)
      : where_(std::move(where)), type_(t), exclusive_(exclusive), reverse_(reverse) {}
  void infer(const OpArgs& a) const override {
    const Tensor& ax = *a.in[1];
    NBITS_CHECK(ax.numel() == 1 && ax.shape.rank <= 1, where_, ": axis must be a scalar, got shape ",
                ax.shape.str());
    NBITS_CHECK(a.in[0]->shape.rank >= 1, where_, ": input must have rank >= 1");
    normalize_axis(read_int(ax, 0), a.in[0]->shape.rank, where_);
    a.out[0]->shape = a.in[0]->shape;
  }
  void run(const OpArgs& a, RunContext&) const override {
    const Shape& s = a.in[0]->shape;
    const int ax = normalize_axis(read_int(*a.in[1], 0), s.rank, where_);
    const int64_t outer = dims_product(s, 0, ax), n = s[ax], inner = dims_product(s, ax + 1, s.rank);
    dispatch_arith(type_, [&](auto z) {
      using T = decltype(z);
      const T* x = a.in[0]->as<const T>();
      T* y = a.out[0]->as<T>();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t c = 0; c < inner; ++c) {
          const int64_t base = o * n * inner + c;
          T acc = T(0);
          for (int64_t j = 0; j < n; ++j) {
            const int64_t i = base + (reverse_ ? n - 1 - j : j) * inner;
            const T v = x[i];
            if (exclusive_) {
              y[i] = acc;
              acc = add(acc, v);
            } else {
              acc = add(acc, v);
              y[i] = acc;
            }
          }
        }
    });
  }

 private:
  // Integer sums wrap (two's complement, as ORT's) instead of being undefined behaviour.
  template <typename T>
  static T add(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    } else {
      return a + b;
    }
  }
  std::string where_;
  DType type_;
  bool exclusive_, reverse_;
};

bool movable(DType t) { return t != DType::kU4 && t != DType::kI4; }

}  // namespace

std::unique_ptr<Op> make_trilu(OpBuild& b) {
  allow_attributes(b, {"upper"});
  b.check(movable(b.type(0)), "input dtype ", graph::dtype_name(b.type(0)), " is not supported");
  if (b.has_input(1)) b.require_type(1, {DType::kI64}, "k");
  const int64_t upper = b.node.attr_int("upper", 1);
  b.check(upper == 0 || upper == 1, "attribute 'upper' must be 0 or 1, got ", upper);
  b.set_outputs(b.type(0));
  return std::make_unique<TriluOp>(b.where(), upper != 0);
}

std::unique_ptr<Op> make_gather_elements(OpBuild& b) {
  allow_attributes(b, {"axis"});
  b.check(movable(b.type(0)), "data dtype ", graph::dtype_name(b.type(0)), " is not supported");
  b.require_type(1, {DType::kI64, DType::kI32}, "indices");
  b.set_outputs(b.type(0));
  return std::make_unique<GatherElementsOp>(b.where(), b.node.attr_int("axis", 0));
}

std::unique_ptr<Op> make_scatter_nd(OpBuild& b) {
  allow_attributes(b, {"reduction"});
  const DType t = b.type(0);
  b.check(movable(t), "data dtype ", graph::dtype_name(t), " is not supported");
  b.require_type(1, {DType::kI64}, "indices");
  b.check(b.type(2) == t, "updates dtype ", graph::dtype_name(b.type(2)), " differs from data dtype ",
          graph::dtype_name(t));
  const std::string red = b.node.attr_string("reduction", "none");
  Reduction r = Reduction::kNone;
  if (red == "add") {
    r = Reduction::kAdd;
  } else if (red == "mul") {
    r = Reduction::kMul;
  } else if (red == "max") {
    r = Reduction::kMax;
  } else if (red == "min") {
    r = Reduction::kMin;
  } else {
    b.check(red == "none", "attribute 'reduction' = '", red, "' is not one of none, add, mul, max, min");
  }
  if (r != Reduction::kNone)
    b.require_type(0, {DType::kF32, DType::kI64, DType::kI32}, "data (with a reduction)");
  b.set_outputs(t);
  return std::make_unique<ScatterNDOp>(b.where(), r);
}

std::unique_ptr<Op> make_cum_sum(OpBuild& b) {
  allow_attributes(b, {"exclusive", "reverse"});
  b.require_type(0, {DType::kF32, DType::kI64, DType::kI32}, "x");
  b.require_type(1, {DType::kI64, DType::kI32}, "axis");
  const int64_t ex = b.node.attr_int("exclusive", 0), rev = b.node.attr_int("reverse", 0);
  b.check(ex == 0 || ex == 1, "attribute 'exclusive' must be 0 or 1, got ", ex);
  b.check(rev == 0 || rev == 1, "attribute 'reverse' must be 0 or 1, got ", rev);
  b.set_outputs(b.type(0));
  return std::make_unique<CumSumOp>(b.where(), b.type(0), ex != 0, rev != 0);
}

}  // namespace nbits::ops
