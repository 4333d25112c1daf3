// MatMulInteger (opset 10): y (int32) = (A - a_zero_point) x (B - b_zero_point), A and B uint8 or
// int8, numpy matmul broadcasting over the batch dims (1-D A or B promoted and the added dim
// dropped, as MatMul). a_zero_point: a scalar (one element) or per row of A (shape [M], or A's
// shape with K replaced by 1); b_zero_point: a scalar or per column of B (shape [N], or B's shape
// with K replaced by 1). The int32 sums wrap modulo 2^32 as ONNX Runtime's (exact for
// K <= 33025, where no product sum can leave int32). quantize_dynamic's int8 decoders feed it
// DynamicQuantizeLinear's uint8 activations and a constant int8/uint8 weight.
#include <algorithm>
#include <cstring>

#include "ops/op_util.h"
#include "ops/ops.h"

namespace nbits::ops {
namespace {

using graph::OpArgs;
using graph::RunContext;

int64_t checked_mul(int64_t a, int64_t b, const std::string& where) {
  int64_t r = 0;
  NBITS_CHECK(!__builtin_mul_overflow(a, b, &r), where, ": output element count overflows int64 (", a, " x ",
              b, ")");
  return r;
}

inline int32_t elem(const void* p, bool is_signed, int64_t i) {
  return is_signed ? static_cast<const int8_t*>(p)[i] : static_cast<const uint8_t*>(p)[i];
}

struct Dims {
  Shape batch;  // broadcast batch dims of y
  int64_t m = 0, k = 0, n = 0;
  bool a_vec = false, b_vec = false;  // 1-D A or B
};

class MatMulIntegerOp final : public Op {
 public:
  MatMulIntegerOp(std::string where, bool a_signed, bool b_signed)
      : where_(std::move(where)), a_signed_(a_signed), b_signed_(b_signed) {}

  void infer(const OpArgs& a) const override {
    const Dims d = dims(a);
    Shape y = d.batch;
    if (!d.a_vec) y.push_back(d.m);
    if (!d.b_vec) y.push_back(d.n);
    int64_t total = 1;
    for (int i = 0; i < y.rank; ++i) total = checked_mul(total, y[i], where_);
    a.out[0]->shape = y;
  }

  void run(const OpArgs& a, RunContext& ctx) const override {
    const Dims d = dims(a);
    const Tensor &ta = *a.in[0], &tb = *a.in[1];
    const Tensor* za = a.input(2);
    const Tensor* zb = a.input(3);
    const int br = d.batch.rank;
    const int64_t batches = d.batch.numel();
    if (batches == 0 || d.m == 0 || d.n == 0) return;
    // Batch strides of A and B (in matrices) under broadcasting.
    Shape sa, sb;
    const Shape& as = ta.shape;
    const Shape& bs = tb.shape;
    for (int i = 0; i < as.rank - 2; ++i) sa.push_back(as[i]);
    for (int i = 0; i < bs.rank - 2; ++i) sb.push_back(bs[i]);
    int64_t ast[Shape::kMaxRank] = {}, bst[Shape::kMaxRank] = {};
    broadcast_strides(sa, br, ast);
    broadcast_strides(sb, br, bst);
    auto* y = a.out[0]->as<uint32_t>();
    const int64_t rows = batches * d.m;
    const int64_t kN = d.n;
    const int64_t col_chunk = 512;
    const int64_t chunks = (kN + col_chunk - 1) / col_chunk;
    ctx.pool.parallel_range(rows * chunks, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t row = t / chunks, c0 = (t % chunks) * col_chunk, c1 = std::min(kN, c0 + col_chunk);
        const int64_t bi = row / d.m, mi = row % d.m;
        int64_t ai = 0, bj = 0;  // matrix index of A and B for batch bi
        for (int64_t r = br - 1, rem = bi; r >= 0; --r) {
          const int64_t idx = rem % d.batch[static_cast<int>(r)];
          rem /= d.batch[static_cast<int>(r)];
          ai += idx * ast[r];
          bj += idx * bst[r];
        }
        const int64_t a_off = (ai * d.m + mi) * d.k;
        const int64_t b_off = bj * d.k * d.n;
        const int32_t a_zp = zero_a(za, ai * d.m + mi, mi);
        uint32_t* yr = y + row * kN;
        for (int64_t c = c0; c < c1; ++c) yr[c] = 0;
        int32_t b_zp_one = 0;
        const bool b_per_col = zb != nullptr && zb->numel() != 1;
        if (zb != nullptr && !b_per_col) b_zp_one = elem(zb->data, b_signed_, 0);
        const int64_t zb_off = zb != nullptr && zb->shape.rank > 1 ? bj * d.n : 0;
        for (int64_t k = 0; k < d.k; ++k) {
          const int32_t av = elem(ta.data, a_signed_, a_off + k) - a_zp;
          if (av == 0) continue;
          const int64_t brow = b_off + k * d.n;
          if (b_signed_) {
            const int8_t* pb = tb.as<const int8_t>() + brow;
            axpy(yr, pb, av, b_per_col ? zb : nullptr, zb_off, b_zp_one, c0, c1);
          } else {
            const uint8_t* pb = tb.as<const uint8_t>() + brow;
            axpy(yr, pb, av, b_per_col ? zb : nullptr, zb_off, b_zp_one, c0, c1);
          }
        }
      }
    });
  }

 private:
  // yr[c] += av * (b[c] - zp[c]) for c in [c0, c1), modulo 2^32.
  template <typename TB>
  static void axpy(uint32_t* yr, const TB* pb, int32_t av, const Tensor* zb, int64_t zb_off, int32_t zp1,
                   int64_t c0, int64_t c1) {
    if (zb == nullptr) {
      for (int64_t c = c0; c < c1; ++c)
        yr[c] += static_cast<uint32_t>(av * (static_cast<int32_t>(pb[c]) - zp1));
      return;
    }
    const TB* z = static_cast<const TB*>(zb->data) + zb_off;
    for (int64_t c = c0; c < c1; ++c)
      yr[c] += static_cast<uint32_t>(av * (static_cast<int32_t>(pb[c]) - static_cast<int32_t>(z[c])));
  }
  int32_t zero_a(const Tensor* za, int64_t flat_row, int64_t mi) const {
    if (za == nullptr) return 0;
    if (za->numel() == 1) return elem(za->data, a_signed_, 0);
    return elem(za->data, a_signed_, za->shape.rank == 1 ? mi : flat_row);
  }
  Dims dims(const OpArgs& a) const {
    const Shape &as = a.in[0]->shape, &bs = a.in[1]->shape;
    NBITS_CHECK(as.rank >= 1 && bs.rank >= 1, where_, ": A ", as.str(), " and B ", bs.str(),
                " must have rank >= 1");
    Dims d;
    d.a_vec = as.rank == 1;
    d.b_vec = bs.rank == 1;
    d.m = d.a_vec ? 1 : as[as.rank - 2];
    d.k = as[as.rank - 1];
    const int64_t kb = d.b_vec ? bs[0] : bs[bs.rank - 2];
    d.n = d.b_vec ? 1 : bs[bs.rank - 1];
    NBITS_CHECK(d.k == kb, where_, ": A ", as.str(), " and B ", bs.str(), " disagree on K (", d.k, " vs ", kb,
                ")");
    Shape ba, bb;
    for (int i = 0; i < as.rank - 2; ++i) ba.push_back(as[i]);
    for (int i = 0; i < bs.rank - 2; ++i) bb.push_back(bs[i]);
    d.batch = broadcast_shapes(ba, bb, where_);
    check_zero_point(a.input(2), as, d.m, "a_zero_point", true);
    check_zero_point(a.input(3), bs, d.n, "b_zero_point", false);
    return d;
  }
  // A scalar, a vector over M (a) / N (b), or the operand's shape with K replaced by 1.
  void check_zero_point(const Tensor* z, const Shape& op, int64_t mn, const char* what, bool is_a) const {
    if (z == nullptr || z->numel() == 1) return;
    if (z->shape.rank == 1 && z->shape[0] == mn && op.rank >= 2) return;
    Shape want = op;
    if (op.rank >= 2) want[is_a ? op.rank - 1 : op.rank - 2] = 1;
    NBITS_CHECK(op.rank >= 2 && z->shape == want, where_, ": ", what, " of shape ", z->shape.str(),
                " is neither a scalar nor per ", is_a ? "row" : "column", " (", mn, " or ", want.str(), ")");
  }
  std::string where_;
  bool a_signed_, b_signed_;
};

}  // namespace

std::unique_ptr<Op> make_matmul_integer(OpBuild& b) {
  allow_attributes(b, {});
  b.require_type(0, {DType::kU8, DType::kI8}, "A");
  b.require_type(1, {DType::kU8, DType::kI8}, "B");
  if (b.has_input(2))
    b.check(b.type(2) == b.type(0), "a_zero_point dtype ", graph::dtype_name(b.type(2)), " differs from A's ",
            graph::dtype_name(b.type(0)));
  if (b.has_input(3))
    b.check(b.type(3) == b.type(1), "b_zero_point dtype ", graph::dtype_name(b.type(3)), " differs from B's ",
            graph::dtype_name(b.type(1)));
  b.set_outputs(DType::kI32);
  return std::make_unique<MatMulIntegerOp>(b.where(), b.type(0) == DType::kI8, b.type(1) == DType::kI8);
}

}  // namespace nbits::ops
