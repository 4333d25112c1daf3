// com.microsoft RotaryEmbedding (ORT contrib op): input [B,S,hidden] or
// [B,N,S,H], position_ids [B,S] (or [1]: an offset, positions offset + s),
// cos/sin caches [max_position, rotary_dim / 2]. Half-split or interleaved
// pairs; rotary_embedding_dim < head size rotates the first part of each head.
#include <cmath>

#include "ops/op_util.h"
#include "ops/ops.h"
#include "ops/rotary.h"

namespace nbits::ops {
namespace {

using graph::OpArgs;
using graph::RunContext;

class RotaryEmbeddingOp final : public Op {
 public:
  RotaryEmbeddingOp(std::string where, int64_t num_heads, int64_t rotary_dim, bool interleaved)
      : where_(std::move(where)), num_heads_(num_heads), rotary_dim_(rotary_dim), interleaved_(interleaved) {}

  void infer(const OpArgs& a) const override {
    geometry(a);
    a.out[0]->shape = a.in[0]->shape;
  }

  void run(const OpArgs& a, RunContext& ctx) const override {
    const Geometry g = geometry(a);
    const Tensor& pos = *a.in[1];
    const int64_t max_pos = a.in[2]->shape[0];
    const bool offset = pos.numel() == 1;  // [1]: an offset ([1,1] reads the same)
    for (int64_t b = 0; b < g.B; ++b)
      for (int64_t s = 0; s < g.S; ++s) {
        const int64_t p = offset ? read_int(pos, 0) + s : read_int(pos, b * g.S + s);
        NBITS_CHECK(p >= 0 && p < max_pos, where_, ": position ", p, " is outside the ", max_pos,
                    " rows of cos_cache");
      }
    const float* x = a.in[0]->as<const float>();
    const float* cos = a.in[2]->as<const float>();
    const float* sin = a.in[3]->as<const float>();
    float* y = a.out[0]->as<float>();
    const bool bnsh = a.in[0]->shape.rank == 4;
    const int64_t rows = g.B * g.N * g.S;
    ctx.pool.parallel_range(rows, 64, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        // r enumerates (b, s, n) for [B,S,hidden] and (b, n, s) for [B,N,S,H]: both are memory order.
        int64_t b, s;
        if (bnsh) {
          b = r / (g.N * g.S);
          s = r % g.S;
        } else {
          b = r / (g.S * g.N);
          s = (r / g.N) % g.S;
        }
        const int64_t p = offset ? read_int(pos, 0) + s : read_int(pos, b * g.S + s);
        rotate(x + r * g.H, cos + p * g.half, sin + p * g.half, g.half, interleaved_, g.H, y + r * g.H);
      }
    });
  }

 private:
  struct Geometry {
    int64_t B = 0, N = 0, S = 0, H = 0, half = 0;
  };

  // The geometry of one run, from the input shapes.
  Geometry geometry(const OpArgs& a) const {
    Geometry g;
    const Shape& x = a.in[0]->shape;
    const Shape& c = a.in[2]->shape;
    NBITS_CHECK(x.rank == 3 || x.rank == 4, where_, ": input must be [B,S,hidden] or [B,N,S,H], got ",
                x.str());
    NBITS_CHECK(c.rank == 2 && c == a.in[3]->shape, where_, ": cos/sin caches must be equal 2-D shapes, got ",
                c.str(), " and ", a.in[3]->shape.str());
    g.half = c[1];
    if (x.rank == 4) {
      g.N = x[1];
      g.S = x[2];
      g.H = x[3];
    } else {
      g.S = x[1];
      // num_heads = 0: each head is what the caches rotate (rotary dim = head size).
      g.H = num_heads_ > 0 ? x[2] / num_heads_ : 2 * g.half;
      NBITS_CHECK(g.H > 0 && x[2] % g.H == 0, where_, ": hidden size ", x[2],
                  " is not a multiple of head size ", g.H);
      g.N = x[2] / g.H;
    }
    g.B = x[0];
    const int64_t rd = rotary_dim_ > 0 ? rotary_dim_ : g.H;
    NBITS_CHECK(rd == 2 * g.half && rd <= g.H, where_, ": rotary dim ", rd, " needs caches of ", rd / 2,
                " columns and at most head size ", g.H, " (caches ", c.str(), ")");
    const Shape& p = a.in[1]->shape;
    NBITS_CHECK(p.numel() == 1 || (p.rank == 2 && p[0] == g.B && p[1] == g.S), where_,
                ": position_ids must be [1] or [", g.B, ",", g.S, "], got ", p.str());
    return g;
  }

  std::string where_;
  int64_t num_heads_, rotary_dim_;
  bool interleaved_;
};

}  // namespace

std::unique_ptr<Op> make_rotary_embedding(OpBuild& b) {
  const onnx::Node& n = b.node;
  b.check(n.inputs.size() == 4 && b.has_input(0) && b.has_input(1) && b.has_input(2) && b.has_input(3),
          "expects 4 inputs (input, position_ids, cos_cache, sin_cache)");
  b.require_type(0, {DType::kF32}, "input");
  b.require_type(1, {DType::kI64, DType::kI32}, "position_ids");
  b.require_type(2, {DType::kF32}, "cos_cache");
  b.require_type(3, {DType::kF32}, "sin_cache");
  const int64_t heads = n.attr_int("num_heads", 0);
  const int64_t rd = n.attr_int("rotary_embedding_dim", 0);
  b.check(heads >= 0 && rd >= 0 && rd % 2 == 0, "num_heads=", heads, " and rotary_embedding_dim=", rd,
          " must be >= 0 (rotary dim even)");
  b.check(rd == 0 || heads > 0, "rotary_embedding_dim needs num_heads");
  b.check(n.attr_int("is_packed_batching", 0) == 0, "attribute is_packed_batching is not supported");
  b.check(n.attr_float("scale", 1.0f) == 1.0f, "attribute scale != 1 is not supported");
  b.set_outputs(DType::kF32);
  return std::make_unique<RotaryEmbeddingOp>(b.where(), heads, rd, n.attr_int("interleaved", 0) != 0);
}

}  // namespace nbits::ops
