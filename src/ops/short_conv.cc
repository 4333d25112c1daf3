// Internal ShortConv: LFM2's gated short convolution (llama.cpp's build_shortconv_block between
// its in_proj and out_proj matmuls).
//   inputs:  0 bcx [B, S, 3E] fp32 (the in_proj output: b, c and x, E each)
//            1 weight [E, taps] fp32 (channel e's taps, the oldest position first)
//            2 (unused)
//            3 past_key, 4 past_value: the layer's slot of the KV cache (as GroupQueryAttention's)
//            5 seqlens_k int32 [B], 6 total_sequence_length int32 (as GroupQueryAttention's)
//   outputs: 0 y [B, S, E] = c * conv(b * x); 1 present_key, 2 present_value (the same buffers)
// conv is causal and depthwise over time: y_t = sum_j weight[e][j] * (b * x)_{t - taps + 1 + j},
// positions before the first being 0 (llama.cpp's zero initial state, ggml_ssm_conv's order).
// The state, b * x of the taps - 1 previous positions, lives in the key slot's bytes as fp32,
// whatever dtype the cache has (the attention layers' --kv-cache): a ring of R = slot bytes / 4E
// positions, position p at p % R. A step reads positions past - taps + 1 .. past - 1 and writes
// past .. past + S - 1, so a sequence rolled back by up to R - taps + 1 positions (rejected
// speculative tokens) reads what its own positions wrote. The value slot is left as it is.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ops/op_util.h"
#include "ops/ops.h"

namespace nbits::ops {
namespace {

using graph::OpArgs;
using graph::RunContext;

class ShortConvOp final : public Op {
 public:
  ShortConvOp(std::string where, std::vector<float> weight, int64_t E, int64_t taps)
      : where_(std::move(where)), w_(std::move(weight)), E_(E), taps_(taps) {}

  void infer(const OpArgs& a) const override {
    const Shape& x = a.in[0]->shape;
    NBITS_CHECK(x.rank == 3 && x[2] == 3 * E_, where_, ": input must be [B, S, ", 3 * E_, "], got ", x.str());
    const Shape& p = a.in[3]->shape;
    NBITS_CHECK(p.rank == 4 && p[0] == x[0] && a.in[4]->shape == p, where_,
                ": past key/value must be one [B, heads, length, row] shape for batch ", x[0], ", got ",
                p.str(), " and ", a.in[4]->shape.str());
    a.out[0]->shape = Shape{x[0], x[1], E_};
    a.out[1]->shape = p;
    a.out[2]->shape = p;
  }

  void run(const OpArgs& a, RunContext&) const override {
    const Tensor& in = *a.in[0];
    const int64_t B = in.shape[0], S = in.shape[1], E = E_, d = taps_ - 1;
    const Tensor& seqlens = *a.in[5];
    NBITS_CHECK(seqlens.numel() == B, where_, ": seqlens_k has ", seqlens.numel(), " values for batch ", B);
    const int64_t total = read_int(*a.in[6], 0);
    const Tensor* io[4] = {a.out[1], a.out[2], a.in[3], a.in[4]};
    const bool apart = io[0]->rows != nullptr || io[2]->rows != nullptr;
    for (int i = 0; i < 2; ++i)
      NBITS_CHECK(io[i]->data == io[i + 2]->data && (io[i]->rows == nullptr) == (io[i + 2]->rows == nullptr),
                  where_, ": the cache must be one buffer (past == present)");
    const Shape& p = io[2]->shape;
    const size_t slot_bytes = static_cast<size_t>(p[1] * p[2] * p[3]) * graph::dtype_size(io[2]->dtype);
    const auto R = static_cast<int64_t>(slot_bytes / (sizeof(float) * static_cast<size_t>(E)));
    NBITS_CHECK(R > d, where_, ": a cache slot of ", slot_bytes, " bytes holds ", R, " positions of ", E,
                " channels; the convolution needs ", d + 1);
    std::vector<float> win(static_cast<size_t>((d + S) * E));
    for (int64_t b = 0; b < B; ++b) {
      const int64_t total_b = read_int(seqlens, b) + 1;
      const int64_t past = S == total ? 0 : total_b - S;
      NBITS_CHECK(past >= 0 && total_b <= p[2], where_, ": seqlens_k[", b, "]=", total_b - 1,
                  " is inconsistent with sequence length ", S, " and cache length ", p[2]);
      auto* ring =
          static_cast<float*>(apart ? io[0]->rows[b] : static_cast<uint8_t*>(io[0]->data) + b * slot_bytes);
      // win: the d previous positions' b * x (from the ring; 0 before the sequence), then this step's.
      for (int64_t j = 0; j < d; ++j) {
        const int64_t pos = past - d + j;
        float* dst = win.data() + j * E;
        if (pos < 0)
          std::fill(dst, dst + E, 0.0f);
        else
          std::memcpy(dst, ring + (pos % R) * E, static_cast<size_t>(E) * sizeof(float));
      }
      const float* bcx = in.as<const float>() + b * S * 3 * E;
      for (int64_t s = 0; s < S; ++s) {
        const float* r = bcx + s * 3 * E;
        float* dst = win.data() + (d + s) * E;
        for (int64_t e = 0; e < E; ++e) dst[e] = r[e] * r[2 * E + e];
      }
      float* y = a.out[0]->as<float>() + b * S * E;
      for (int64_t s = 0; s < S; ++s) {
        const float* c = bcx + s * 3 * E + E;
        for (int64_t e = 0; e < E; ++e) {
          const float* w = w_.data() + e * taps_;
          float acc = 0.0f;
          for (int64_t j = 0; j < taps_; ++j) acc += win[static_cast<size_t>((s + j) * E + e)] * w[j];
          y[s * E + e] = c[e] * acc;
        }
      }
      for (int64_t s = std::max<int64_t>(0, S - R); s < S; ++s)
        std::memcpy(ring + ((past + s) % R) * E, win.data() + (d + s) * E,
                    static_cast<size_t>(E) * sizeof(float));
    }
  }

  const char* kernel_name(const OpArgs&) const override { return "short_conv"; }
  bool takes_row_pointers(bool output, size_t i) const override {
    return output ? i == 1 || i == 2 : i == 3 || i == 4;
  }

 private:
  std::string where_;
  std::vector<float> w_;  // [E, taps]
  int64_t E_, taps_;
};

}  // namespace

std::unique_ptr<Op> make_short_conv(OpBuild& b) {
  b.require_type(0, {DType::kF32}, "input");
  b.require_type(1, {DType::kF32}, "weight");
  const Tensor& w = b.constant(1, "weight");
  b.check(w.shape.rank == 2 && w.shape[0] > 0 && w.shape[1] >= 2 && w.shape[1] <= 64,
          "weight must be [E, taps]", " with 2 to 64 taps, got ", w.shape.str());
  b.check(!b.has_input(2), "input 2 must be empty");
  b.check(b.has_input(3) && b.has_input(4), "past_key and past_value are required");
  b.check(b.type(3) == b.type(4), "past_key and past_value must have one dtype");
  b.require_type(5, {DType::kI32}, "seqlens_k");
  b.require_type(6, {DType::kI32}, "total_sequence_length");
  b.check(b.node.outputs.size() == 3 && b.node.has_output(1) && b.node.has_output(2),
          "outputs y, present_key and present_value are required");
  b.set_outputs(DType::kF32);
  b.out_types[1] = b.out_types[2] = b.type(3);
  std::vector<float> weight(w.as<const float>(), w.as<const float>() + w.numel());
  return std::make_unique<ShortConvOp>(b.where(), std::move(weight), w.shape[0], w.shape[1]);
}

}  // namespace nbits::ops
