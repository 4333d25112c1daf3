// nbits.internal MixtureOfExperts: the routed feed-forward of a mixture-of-experts layer (the
// GGUF qwen3moe / qwen2moe / olmoe / granitemoe / Mixtral-style llama / gpt-oss models,
// gguf/model_builder).
//   inputs: 0 X [..., hidden], 1 router logits [..., n_expert] (the router's MatMul before it),
//           then per projection (gate 2..5, up 6..9, down 10..13), every expert's rows stacked
//           as one MatMulNBits weight of n_expert * N rows: codes, fp32 scales, optional packed
//           zero points, optional fp32 block mins (the MatMulNBits inputs B, scales,
//           zero_points and nbits' input 6); optional fp32 biases 14 gate [n_expert, inter],
//           15 up [n_expert, inter], 16 down [n_expert, hidden] (gpt-oss).
//   attributes: n_expert, k, hidden_size, inter_size, {gate,up,down}_{bits,block_size},
//           gating ("softmax" | "sigmoid" | "softmax_after_topk"), normalize (0/1),
//           weight_scale (0: none), accuracy_level (MatMulNBits'), activation ("silu" |
//           "swiglu_oai", with activation_alpha (1.702) and swiglu_limit (7): kernels/expert_ffn.h).
//   output: Y [..., hidden] = sum over the row's k experts of w * down(act(gate(x), up(x))).
// The op itself (packing, routing, the experts): ops/expert_layer.h.
#include <cmath>
#include <string>
#include <vector>

#include "ops/expert_layer.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace nbits::ops {

std::unique_ptr<Op> make_mixture_of_experts(OpBuild& b) {
  const onnx::Node& n = b.node;
  ExpertLayerSpec spec;
  kernels::ExpertRouting& routing = spec.routing;
  routing.n_expert = n.attr_int_required("n_expert");
  routing.k = n.attr_int_required("k");
  routing.normalize = n.attr_int("normalize", 0) != 0;
  routing.scale = n.attr_float("weight_scale", 0.0f);
  const std::string gating = n.attr_string("gating", "softmax");
  b.check(kernels::parse_gating(gating.c_str(), routing.gating), "gating '", gating,
          "' is not supported (softmax, sigmoid, softmax_after_topk)");
  const int64_t E = routing.n_expert;
  spec.hidden = n.attr_int_required("hidden_size");
  spec.inter = n.attr_int_required("inter_size");
  b.check(E >= 1 && E <= 4096, "n_expert=", E, " must be in [1, 4096]");
  b.check(spec.hidden > 0 && spec.inter > 0, "hidden_size=", spec.hidden, " and inter_size=", spec.inter,
          " must be positive");
  b.require_type(0, {DType::kF32}, "X");
  b.require_type(1, {DType::kF32}, "router_logits");
  kernels::ExpertActivation& act = spec.act;
  const std::string activation = n.attr_string("activation", "silu");
  b.check(activation == "silu" || activation == "swiglu_oai", "activation '", activation,
          "' is not supported (silu, swiglu_oai)");
  if (activation == "swiglu_oai") {
    act.kind = kernels::ExpertActivation::Kind::kSwigluOai;
    act.alpha = n.attr_float("activation_alpha", act.alpha);
    act.limit = n.attr_float("swiglu_limit", act.limit);
    b.check(std::isfinite(act.alpha) && act.alpha > 0 && std::isfinite(act.limit) && act.limit > 0,
            "activation_alpha=", act.alpha, " and swiglu_limit=", act.limit, " must be finite and positive");
  }
  spec.accuracy_level = b.options.accuracy_level.value_or(static_cast<int>(n.attr_int("accuracy_level", 4)));

  // The three projections: every expert's rows stacked as one [n_expert * N, K] MatMulNBits weight,
  // N x K = inter x hidden (gate, up) or hidden x inter (down); expert e is rows [e N, (e + 1) N).
  const char* names[3] = {"gate", "up", "down"};
  const int64_t dims[3][2] = {
      {spec.inter, spec.hidden}, {spec.inter, spec.hidden}, {spec.hidden, spec.inter}};
  for (int p = 0; p < 3; ++p) {
    const size_t in0 = 2 + 4 * static_cast<size_t>(p);
    const std::string name = names[p];
    kernels::QuantizedMatrix w;
    w.N = E * dims[p][0];
    w.K = dims[p][1];
    w.bits = static_cast<int>(n.attr_int_required(name + "_bits"));
    w.block_size = static_cast<int>(n.attr_int_required(name + "_block_size"));
    b.check(w.bits == 4 || w.bits == 8, name, "_bits=", w.bits, " is not supported (4 or 8)");
    b.check(w.block_size >= 16 && (w.block_size & (w.block_size - 1)) == 0, name,
            "_block_size=", w.block_size, " must be a power of two >= 16");
    const int64_t kb = w.k_blocks(), blob = w.blob_bytes();
    const Tensor& B = b.constant(in0, "expert codes");
    b.require_type(in0, {DType::kU8}, "expert codes");
    b.check(B.numel() == w.N * kb * blob, name, " codes '", n.inputs[in0], "' hold ", B.numel(),
            " bytes, expected n_expert=", E, " x N=", dims[p][0], " x k_blocks=", kb, " x ", blob);
    w.codes = static_cast<const uint8_t*>(B.data);
    const Tensor& S = b.constant(in0 + 1, "expert scales");
    b.require_type(in0 + 1, {DType::kF32}, "expert scales");
    b.check(S.numel() == w.N * kb, name, " scales '", n.inputs[in0 + 1], "' hold ", S.numel(),
            " values, expected ", w.N * kb);
    w.scales = static_cast<const float*>(S.data);
    if (b.has_input(in0 + 2)) {
      const Tensor& Z = b.constant(in0 + 2, "expert zero points");
      b.require_type(in0 + 2, {DType::kU8}, "expert zero points");
      b.check(Z.numel() == w.N * w.zp_row_bytes(), name, " zero points hold ", Z.numel(), " bytes, expected ",
              w.N * w.zp_row_bytes());
      w.zero_points = static_cast<const uint8_t*>(Z.data);
    }
    if (b.has_input(in0 + 3)) {
      const Tensor& M = b.constant(in0 + 3, "expert block mins");
      b.require_type(in0 + 3, {DType::kF32}, "expert block mins");
      b.check(M.numel() == w.N * kb, name, " block mins hold ", M.numel(), " values, expected ", w.N * kb);
      w.mins = static_cast<const float*>(M.data);
    }
    const int64_t N = dims[p][0];
    const auto slice = [w, N](int64_t e) {  // expert e's rows, a view of the file
      kernels::QuantizedMatrix s = w;
      const int64_t blocks = w.k_blocks(), r0 = e * N;
      s.N = N;
      s.codes += r0 * blocks * w.blob_bytes();
      s.scales += r0 * blocks;
      if (w.zero_points != nullptr) s.zero_points += r0 * w.zp_row_bytes();
      if (w.mins != nullptr) s.mins += r0 * blocks;
      return s;
    };
    ExpertProjection& pr = spec.proj[p];
    pr.name = names[p];
    pr.quantized = slice;
    pr.done = [&b, slice](int64_t e) {  // expert e's file pages go once it is packed
      if (!b.release_pages) return;
      const kernels::QuantizedMatrix s = slice(e);
      b.release_pages(s.codes, static_cast<size_t>(s.N * s.k_blocks() * s.blob_bytes()));
      b.release_pages(s.scales, static_cast<size_t>(s.N * s.k_blocks()) * sizeof(float));
    };
    // Optional biases 14..16, [n_expert, N], copied into the op.
    const size_t bias_in = 14 + static_cast<size_t>(p);
    if (b.has_input(bias_in)) {
      const Tensor& t = b.constant(bias_in, "expert biases");
      b.require_type(bias_in, {DType::kF32}, "expert biases");
      b.check(t.numel() == E * N, name, " biases '", n.inputs[bias_in], "' hold ", t.numel(),
              " values, expected n_expert=", E, " x ", N);
      pr.bias.assign(t.as<const float>(), t.as<const float>() + t.numel());
    }
  }
  return make_expert_layer(b, std::move(spec));
}

}  // namespace nbits::ops
