// Internal AttentionMaskLengths(attention_mask [B, T]) -> (seqlens_k int32 [B],
// total_sequence_length int32 scalar): GroupQueryAttention's length inputs, as the
// builder's GQA graphs compute them (ReduceSum(mask, 1) - 1, Shape(mask)[1]).
// Added by graph/rewrites.h fuse_mha_into_gqa.
#include <cstdint>

#include "ops/op_util.h"
#include "ops/ops.h"

namespace nbits::ops {
namespace {

using graph::OpArgs;
using graph::RunContext;

class AttentionMaskLengthsOp final : public Op {
 public:
  explicit AttentionMaskLengthsOp(std::string where) : where_(std::move(where)) {}
  void infer(const OpArgs& a) const override {
    const Shape& m = a.in[0]->shape;
    NBITS_CHECK(m.rank == 2, where_, ": attention_mask must be [batch, total_length], got ", m.str());
    a.out[0]->shape = Shape{m[0]};
    a.out[1]->shape = Shape{};
  }
  void run(const OpArgs& a, RunContext&) const override {
    const Tensor& m = *a.in[0];
    const int64_t B = m.shape[0], T = m.shape[1];
    NBITS_CHECK(T <= INT32_MAX, where_, ": total length ", T, " does not fit int32");
    auto* seqlens = a.out[0]->as<int32_t>();
    for (int64_t b = 0; b < B; ++b) {
      int64_t sum = 0;
      for (int64_t t = 0; t < T; ++t) sum += read_int(m, b * T + t);
      NBITS_CHECK(sum >= 1 && sum <= T, where_, ": attention_mask row ", b, " sums to ", sum, " (want 1..", T,
                  ")");
      seqlens[b] = static_cast<int32_t>(sum - 1);
    }
    *a.out[1]->as<int32_t>() = static_cast<int32_t>(T);
  }

 private:
  std::string where_;
};

}  // namespace

std::unique_ptr<Op> make_attention_mask_lengths(OpBuild& b) {
  b.require_type(0, {DType::kI64, DType::kI32}, "attention_mask");
  b.check(b.node.outputs.size() == 2, "needs outputs seqlens_k and total_sequence_length");
  b.set_outputs(DType::kI32);
  return std::make_unique<AttentionMaskLengthsOp>(b.where());
}

}  // namespace nbits::ops
