// com.microsoft MoE and QMoE: the expert layers onnxruntime-genai's builder emits (gpt-oss and the
// other MoE families), with ONNX Runtime's CPU semantics (docs/ContribOperators.md and the CPU
// kernels: contrib_ops/cpu/moe):
//   inputs: 0 X [..., hidden], 1 router_probs [..., n_expert] (logits);
//     MoE:  2 fc1 weights [E, 2 inter, hidden] fp32/fp16, 3 fc1 bias [E, 2 inter],
//           4 fc2 weights [E, hidden, inter], 5 fc2 bias [E, hidden]; 6, 7 (fc3) refused.
//     QMoE: 2 fc1 codes [E, 2 inter, hidden * bits / 8] uint8 (4 bits: element 2j in the low
//           nibble), 3 fc1 scales [E, 2 inter] (row-wise, also [E, 2 inter, 1]) or
//           [E, 2 inter, hidden / block_size], 4 fc1 bias, 5 fc2 codes, 6 fc2 scales, 7 fc2 bias,
//           11 / 12 zero points (row-wise [E, ceil(N bits / 8)] packed across rows; block-wise
//           [E, N, ceil(blocks bits / 8)]; absent: 2^(bits - 1)); 8-10, 13 (fc3), 14 router_weights
//           and 15-20 (FP4 / FP8 scales) refused.
//   w = (q - zp) * scale, weights [E, N, K] row-major (y = x W^T).
//   Routing: QMoE takes the top k logits and soft-maxes them among themselves (the weights sum to 1;
//   normalize_routing_weights changes nothing); MoE soft-maxes all n_expert logits, takes the top k
//   and divides by their sum when normalize_routing_weights = 1. Exact ties: ONNX Runtime takes the
//   higher expert index, nbits the lower (kernels/expert_routing.h).
//   Activation: swiglu with swiglu_fusion = 1 (fc1's rows interleaved: 2i gate, 2i + 1 linear),
//   h = g' sigmoid(alpha g') (l' + beta), g' = min(g, swiglu_limit), l' = clamp(l, +-swiglu_limit)
//   (alpha 1, beta 0, no limit by default; gpt-oss: 1.702, 1, 7). The non-gated activations (relu,
//   gelu, silu, identity on all of fc1) and the other fusions are refused by name.
//   QMoE's accuracy_level (0 by default: fp32 activations, as ONNX Runtime's 4-bit path) chooses
//   the compute as MatMulNBits' does; the session's --accuracy-level overrides it.
// The experts are rearranged one at a time (gate / up de-interleaved, scales widened to fp32) and
// packed by ops/expert_layer.h.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "base/fp16.h"
#include "ops/expert_layer.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace nbits::ops {
namespace {

// Floats of a constant fp32 / fp16 tensor, element i.
float float_at(const Tensor& t, int64_t i) {
  if (t.dtype == DType::kF16) return fp16_to_float(load_u16(t.data, i));
  float f;
  std::memcpy(&f, static_cast<const uint8_t*>(t.data) + i * 4, 4);
  return f;
}

// The attributes both ops share: routing and the activation.
void read_common(OpBuild& b, ExpertLayerSpec& spec, bool quantized) {
  const onnx::Node& n = b.node;
  spec.routing.k = n.attr_int("k", 1);
  spec.routing.normalize = n.attr_int("normalize_routing_weights", 0) != 0;
  spec.routing.gating =
      quantized ? kernels::ExpertGating::kSoftmaxAfterTopK : kernels::ExpertGating::kSoftmax;
  b.check(n.attr_int("use_sparse_mixer", 0) == 0,
          "use_sparse_mixer=1 (Phi-3.5-MoE's SparseMixer routing) is not supported");
  const std::string act = n.attr_string("activation_type", "relu");
  b.check(
      act == "swiglu", "activation_type '", act,
      "' is not supported: nbits runs gated experts (swiglu with swiglu_fusion=1), not relu / gelu / silu / "
      "identity on all of fc1");
  const int64_t fusion = n.attr_int("swiglu_fusion", 0);
  b.check(fusion == 1, "swiglu_fusion=", fusion,
          " is not supported (1: fc1's gate and linear rows interleaved; 0 needs fc3, 2 is CUDA's)");
  b.check(n.attr_int("swiglu_limit_after_activation", 0) == 0,
          "swiglu_limit_after_activation=1 is not supported");
  kernels::ExpertActivation& a = spec.act;
  a.kind = kernels::ExpertActivation::Kind::kSwigluOai;
  a.alpha = n.attr_float("activation_alpha", 1.0f);
  a.beta = n.attr_float("activation_beta", 0.0f);
  a.limit = n.attr_float("swiglu_limit", std::numeric_limits<float>::infinity());
  b.check(std::isfinite(a.alpha) && a.alpha > 0, "activation_alpha=", a.alpha,
          " must be finite and positive");
  b.check(std::isfinite(a.beta), "activation_beta must be finite");
  b.check(a.limit > 0, "swiglu_limit=", a.limit, " must be positive");
  b.require_type(0, {DType::kF32}, "input");
  b.require_type(1, {DType::kF32}, "router_probs");
}

// fc1's bias [E, 2 inter] interleaved -> gate and up biases [E, inter]; fc2's [E, hidden].
void read_biases(OpBuild& b, ExpertLayerSpec& spec, size_t fc1_bias, size_t fc2_bias) {
  const int64_t E = spec.routing.n_expert, I = spec.inter, H = spec.hidden;
  if (b.has_input(fc1_bias)) {
    const Tensor& t = b.constant(fc1_bias, "fc1 bias");
    b.require_type(fc1_bias, {DType::kF32, DType::kF16}, "fc1 bias");
    b.check(t.numel() == E * 2 * I, "fc1 bias '", b.node.inputs[fc1_bias], "' holds ", t.numel(),
            " values, expected ", E, " x ", 2 * I);
    spec.proj[0].bias.resize(static_cast<size_t>(E * I));
    spec.proj[1].bias.resize(static_cast<size_t>(E * I));
    for (int64_t i = 0; i < E * I; ++i) {
      spec.proj[0].bias[static_cast<size_t>(i)] = float_at(t, 2 * i);
      spec.proj[1].bias[static_cast<size_t>(i)] = float_at(t, 2 * i + 1);
    }
  }
  if (b.has_input(fc2_bias)) {
    const Tensor& t = b.constant(fc2_bias, "fc2 bias");
    b.require_type(fc2_bias, {DType::kF32, DType::kF16}, "fc2 bias");
    b.check(t.numel() == E * H, "fc2 bias '", b.node.inputs[fc2_bias], "' holds ", t.numel(),
            " values, expected ", E, " x ", H);
    spec.proj[2].bias.resize(static_cast<size_t>(E * H));
    for (int64_t i = 0; i < E * H; ++i) spec.proj[2].bias[static_cast<size_t>(i)] = float_at(t, i);
  }
}

void refuse_inputs(OpBuild& b, std::initializer_list<size_t> inputs, const char* why) {
  for (size_t i : inputs) b.check(!b.has_input(i), "input ", i, " ('", b.node.inputs[i], "') ", why);
}

// The rows of one expert of a [E, rows, ...] tensor, `step` apart from `first` (fc1's gate rows: 0, 2).
struct RowPick {
  int64_t first = 0, step = 1;
};

// The quantized experts of one fc weight, one expert at a time into owned buffers.
class QuantizedSource {
 public:
  QuantizedSource(OpBuild& b, size_t w_in, size_t s_in, size_t zp_in, const char* fc, int64_t E, int64_t rows,
                  int64_t K, int bits, int64_t block)
      : b_(b), rows_(rows), K_(K), bits_(bits), row_bytes_(K * bits / 8) {
    const Tensor& W = b.constant(w_in, fc);
    b.require_type(w_in, {DType::kU8}, fc);
    b.check(W.numel() == E * rows * row_bytes_, fc, " weights '", b.node.inputs[w_in], "' ", W.shape.str(),
            " hold ", W.numel(), " bytes, expected ", E, " x ", rows, " x ", row_bytes_);
    codes_ = static_cast<const uint8_t*>(W.data);
    scales_ = &b.constant(s_in, "scales");
    b.require_type(s_in, {DType::kF32, DType::kF16}, "scales");
    row_wise_ = block == 0;
    // Row-wise scales become blocks of the largest power of two <= 256 dividing K (the same values).
    block_ = block;
    if (row_wise_)
      for (int64_t c = 256; c >= 16 && block_ == 0; c /= 2)
        if (K % c == 0) block_ = c;
    b.check(block_ >= 16, fc, ": K=", K, " has no power-of-two divisor >= 16 to hold its row-wise scales");
    b.check(K % block_ == 0, fc, ": K=", K, " is not a multiple of block_size=", block_);
    blocks_ = K / block_;
    const int64_t src_blocks = row_wise_ ? 1 : blocks_;
    b.check(scales_->numel() == E * rows * src_blocks, fc, " scales '", b.node.inputs[s_in], "' ",
            scales_->shape.str(), " hold ", scales_->numel(), " values, expected ", E, " x ", rows, " x ",
            src_blocks);
    if (b.has_input(zp_in)) {
      zp_ = &b.constant(zp_in, "zero points");
      b.require_type(zp_in, {DType::kU8}, "zero points");
      const int64_t want = row_wise_ ? E * ((rows * bits + 7) / 8) : E * rows * ((blocks_ * bits + 7) / 8);
      b.check(zp_->numel() == want, fc, " zero points '", b.node.inputs[zp_in], "' ", zp_->shape.str(),
              " hold ", zp_->numel(), " bytes, expected ", want);
    }
  }

  // Expert e's rows first, first + step, ... (N of them) as a MatMulNBits weight in owned buffers.
  kernels::QuantizedMatrix expert(int64_t e, RowPick pick, int64_t N) {
    kernels::QuantizedMatrix w;
    w.N = N, w.K = K_, w.bits = bits_, w.block_size = static_cast<int>(block_);
    const int64_t zrow = w.zp_row_bytes();
    codes_buf_.resize(static_cast<size_t>(N * row_bytes_));
    scales_buf_.resize(static_cast<size_t>(N * blocks_));
    if (zp_ != nullptr) zp_buf_.assign(static_cast<size_t>(N * zrow), 0);
    const auto* zsrc = zp_ != nullptr ? static_cast<const uint8_t*>(zp_->data) : nullptr;
    for (int64_t n = 0; n < N; ++n) {
      const int64_t r = e * rows_ + pick.first + n * pick.step;  // the source row
      std::memcpy(codes_buf_.data() + n * row_bytes_, codes_ + r * row_bytes_,
                  static_cast<size_t>(row_bytes_));
      for (int64_t c = 0; c < blocks_; ++c)
        scales_buf_[static_cast<size_t>(n * blocks_ + c)] =
            float_at(*scales_, row_wise_ ? r : r * blocks_ + c);
      if (zsrc == nullptr) continue;
      for (int64_t c = 0; c < blocks_; ++c) {
        int z;
        if (row_wise_) {  // packed across the expert's rows
          const int64_t er = pick.first + n * pick.step, bytes = (rows_ * bits_ + 7) / 8;
          z = bits_ == 8 ? zsrc[e * bytes + er] : (zsrc[e * bytes + er / 2] >> (4 * (er % 2))) & 15;
        } else {
          const int64_t bytes = (blocks_ * bits_ + 7) / 8;
          z = bits_ == 8 ? zsrc[r * bytes + c] : (zsrc[r * bytes + c / 2] >> (4 * (c % 2))) & 15;
        }
        uint8_t& dst = zp_buf_[static_cast<size_t>(n * zrow + (bits_ == 8 ? c : c / 2))];
        dst = static_cast<uint8_t>(bits_ == 8 ? z : dst | (z << (4 * (c % 2))));
      }
    }
    w.codes = codes_buf_.data();
    w.scales = scales_buf_.data();
    w.zero_points = zp_ != nullptr ? zp_buf_.data() : nullptr;
    return w;
  }

  // Expert e is packed: its file pages may go.
  void done(int64_t e) const {
    if (b_.release_pages)
      b_.release_pages(codes_ + e * rows_ * row_bytes_, static_cast<size_t>(rows_ * row_bytes_));
  }

 private:
  OpBuild& b_;
  int64_t rows_, K_;
  int bits_;
  int64_t row_bytes_, block_ = 0, blocks_ = 1;
  bool row_wise_ = false;
  const uint8_t* codes_ = nullptr;
  const Tensor* scales_ = nullptr;
  const Tensor* zp_ = nullptr;
  std::vector<uint8_t> codes_buf_, zp_buf_;
  std::vector<float> scales_buf_;
};

}  // namespace

std::unique_ptr<Op> make_ort_qmoe(OpBuild& b) {
  const onnx::Node& n = b.node;
  ExpertLayerSpec spec;
  read_common(b, spec, true);
  refuse_inputs(b, {8, 9, 10, 13},
                "(fc3: a separate gate projection) is not supported: fc1 holds gate and linear");
  refuse_inputs(b, {14}, "(router_weights: mixing weights apart from the router's) is not supported");
  refuse_inputs(b, {15, 16, 17, 18, 19, 20}, "(FP4 / FP8 global and activation scales) is not supported");
  const std::string qt = n.attr_string("quant_type", "int");
  b.check(qt == "int", "quant_type '", qt, "' is not supported (int: 4- or 8-bit integer codes)");
  const int64_t prepacked = n.attr_int("weights_prepacked", -1);
  b.check(prepacked == -1 || prepacked == 0, "weights_prepacked=", prepacked,
          " (a CUDA layout) is not supported");
  const int bits = static_cast<int>(n.attr_int("expert_weight_bits", 4));
  b.check(bits == 4 || bits == 8, "expert_weight_bits=", bits, " is not supported (4 or 8)");
  for (const char* a : {"fc1_expert_weight_bits", "fc2_expert_weight_bits", "fc3_expert_weight_bits"}) {
    const int64_t v = n.attr_int(a, bits);
    b.check(v == bits, a, "=", v, " differs from expert_weight_bits=", bits,
            ": mixed widths are not supported");
  }
  const int64_t block = n.attr_int("block_size", 0);
  b.check(block == 0 || (block >= 16 && (block & (block - 1)) == 0), "block_size=", block,
          " must be a power of two >= 16 (or absent: one scale per row)");
  const Tensor& W1 = b.constant(2, "fc1 weights");
  const Tensor& W2 = b.constant(5, "fc2 weights");
  b.check(W1.shape.rank == 3 && W2.shape.rank == 3 && W1.shape[0] == W2.shape[0] && W1.shape[1] % 2 == 0,
          "fc1 ", W1.shape.str(), " and fc2 ", W2.shape.str(),
          " weights must be [E, 2 inter, hidden * bits / 8] and [E, "
          "hidden, inter * bits / 8]");
  const int64_t E = W1.shape[0], I = W1.shape[1] / 2, H = W1.shape[2] * 8 / bits;
  b.check(W2.shape[1] == H && W2.shape[2] * 8 / bits == I, "fc2 weights ", W2.shape.str(),
          " do not match fc1's ", W1.shape.str(), " (hidden=", H, ", inter=", I, ")");
  spec.routing.n_expert = E;
  spec.hidden = H;
  spec.inter = I;
  spec.accuracy_level = b.options.accuracy_level.value_or(static_cast<int>(n.attr_int("accuracy_level", 0)));
  read_biases(b, spec, 4, 7);
  auto fc1 = std::make_shared<QuantizedSource>(b, 2, 3, 11, "fc1", E, 2 * I, H, bits, block);
  auto fc2 = std::make_shared<QuantizedSource>(b, 5, 6, 12, "fc2", E, H, I, bits, block);
  spec.proj[0].name = "gate";
  spec.proj[0].quantized = [fc1, I](int64_t e) { return fc1->expert(e, {0, 2}, I); };
  spec.proj[1].name = "up";
  spec.proj[1].quantized = [fc1, I](int64_t e) { return fc1->expert(e, {1, 2}, I); };
  spec.proj[1].done = [fc1](int64_t e) { fc1->done(e); };
  spec.proj[2].name = "down";
  spec.proj[2].quantized = [fc2, H](int64_t e) { return fc2->expert(e, {0, 1}, H); };
  spec.proj[2].done = [fc2](int64_t e) { fc2->done(e); };
  return make_expert_layer(b, std::move(spec));
}

std::unique_ptr<Op> make_ort_moe(OpBuild& b) {
  ExpertLayerSpec spec;
  read_common(b, spec, false);
  refuse_inputs(b, {6, 7}, "(fc3: a separate gate projection) is not supported: fc1 holds gate and linear");
  const Tensor& W1 = b.constant(2, "fc1 weights");
  const Tensor& W2 = b.constant(4, "fc2 weights");
  b.require_type(2, {DType::kF32, DType::kF16}, "fc1 weights");
  b.require_type(4, {W1.dtype}, "fc2 weights (fc1's type)");
  b.check(W1.shape.rank == 3 && W2.shape.rank == 3 && W1.shape[0] == W2.shape[0] && W1.shape[1] % 2 == 0,
          "fc1 ", W1.shape.str(), " and fc2 ", W2.shape.str(),
          " weights must be [E, 2 inter, hidden] and [E, hidden, inter]");
  const int64_t E = W1.shape[0], I = W1.shape[1] / 2, H = W1.shape[2];
  b.check(W2.shape[1] == H && W2.shape[2] == I, "fc2 weights ", W2.shape.str(), " do not match fc1's ",
          W1.shape.str());
  spec.routing.n_expert = E;
  spec.hidden = H;
  spec.inter = I;
  read_biases(b, spec, 3, 5);
  const kernels::X16Float elem = W1.dtype == DType::kF16 ? kernels::X16Float::kF16 : kernels::X16Float::kF32;
  const size_t es = elem == kernels::X16Float::kF16 ? 2 : 4;
  const auto* w1 = static_cast<const uint8_t*>(W1.data);
  const auto* w2 = static_cast<const uint8_t*>(W2.data);
  // fc1's gate (even) or linear (odd) rows of expert e, into a buffer.
  auto rows = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(I * H) * es);
  for (int p = 0; p < 2; ++p) {
    spec.proj[p].name = p == 0 ? "gate" : "up";
    spec.proj[p].float_elem = elem;
    spec.proj[p].floats = [rows, w1, p, I, H, es](int64_t e) -> const void* {
      for (int64_t i = 0; i < I; ++i)
        std::memcpy(rows->data() + static_cast<size_t>(i * H) * es,
                    w1 + static_cast<size_t>((e * 2 * I + 2 * i + p) * H) * es, static_cast<size_t>(H) * es);
      return rows->data();
    };
  }
  spec.proj[2].name = "down";
  spec.proj[2].float_elem = elem;
  spec.proj[2].floats = [w2, H, I, es](int64_t e) -> const void* {
    return w2 + static_cast<size_t>(e * H * I) * es;
  };
  return make_expert_layer(b, std::move(spec));
}

}  // namespace nbits::ops
