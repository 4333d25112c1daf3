// Internal PositionScale: each token's first `channels` values times a per-position factor (the
// Llama 4 / mistral3 attention temperature on q, ahead of GroupQueryAttention: a factor per
// position commutes with the rotation, so scaling before rope is scaling after it).
//   inputs:  0 x [B, S, N] fp32; 1 table [T] fp32 (position p's factor)
//            2 seqlens_k int32 [B], 3 total_sequence_length int32 (as GroupQueryAttention's)
//   attribute: channels (1..N; the rest of each row, k and v of a packed qkv, pass through)
//   output:  0 y [B, S, N]
// Row b's token s is at position seqlens_k[b] + 1 - S + s (0-based s), or s when S is the total
// length (a first step), as GroupQueryAttention places it.
#include <cstdint>
#include <cstring>
#include <vector>

#include "ops/op_util.h"
#include "ops/ops.h"

namespace nbits::ops {
namespace {

using graph::OpArgs;
using graph::RunContext;

class PositionScaleOp final : public Op {
 public:
  PositionScaleOp(std::string where, std::vector<float> table, int64_t channels)
      : where_(std::move(where)), table_(std::move(table)), channels_(channels) {}

  void infer(const OpArgs& a) const override {
    const Shape& x = a.in[0]->shape;
    NBITS_CHECK(x.rank == 3 && x[2] >= channels_, where_, ": input must be [B, S, N >= ", channels_,
                "], got ", x.str());
    a.out[0]->shape = x;
  }

  void run(const OpArgs& a, RunContext&) const override {
    const Tensor& in = *a.in[0];
    const int64_t B = in.shape[0], S = in.shape[1], N = in.shape[2];
    const Tensor& seqlens = *a.in[2];
    NBITS_CHECK(seqlens.numel() == B, where_, ": seqlens_k has ", seqlens.numel(), " values for batch ", B);
    const int64_t total = read_int(*a.in[3], 0);
    const auto T = static_cast<int64_t>(table_.size());
    const float* x = in.as<const float>();
    float* y = a.out[0]->as<float>();
    if (y != x) std::memcpy(y, x, static_cast<size_t>(B * S * N) * sizeof(float));
    for (int64_t b = 0; b < B; ++b) {
      const int64_t past = S == total ? 0 : read_int(seqlens, b) + 1 - S;
      NBITS_CHECK(past >= 0 && past + S <= T, where_, ": positions ", past, "..", past + S - 1,
                  " are outside the table of ", T);
      for (int64_t s = 0; s < S; ++s) {
        const float f = table_[static_cast<size_t>(past + s)];
        float* row = y + (b * S + s) * N;
        for (int64_t c = 0; c < channels_; ++c) row[c] *= f;
      }
    }
  }

  const char* kernel_name(const OpArgs&) const override { return "position_scale"; }

 private:
  std::string where_;
  std::vector<float> table_;
  int64_t channels_;
};

}  // namespace

std::unique_ptr<Op> make_position_scale(OpBuild& b) {
  b.require_type(0, {DType::kF32}, "input");
  b.require_type(1, {DType::kF32}, "table");
  const Tensor& t = b.constant(1, "table");
  b.check(t.shape.rank == 1 && t.shape[0] > 0, "table must be [T], got ", t.shape.str());
  b.require_type(2, {DType::kI32}, "seqlens_k");
  b.require_type(3, {DType::kI32}, "total_sequence_length");
  const int64_t channels = b.node.attr_int_required("channels");
  b.check(channels > 0, "attribute channels must be positive, got ", channels);
  b.set_outputs(DType::kF32);
  return std::make_unique<PositionScaleOp>(
      b.where(), std::vector<float>(t.as<const float>(), t.as<const float>() + t.numel()), channels);
}

}  // namespace nbits::ops
