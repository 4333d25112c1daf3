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
// Routing: kernels/expert_routing.h; the experts: kernels/expert_ffn.h. Each expert matrix is
// packed at load by the MatMulNBits dispatch point, like any other weight.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/expert_ffn.h"
#include "kernels/expert_routing.h"
#include "kernels/matmul_nbits.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace nbits::ops {
namespace {

using graph::OpArgs;
using graph::RunContext;

class MixtureOfExpertsOp final : public Op {
 public:
  MixtureOfExpertsOp(std::string where, kernels::ExpertRouting routing,
                     std::vector<std::unique_ptr<kernels::PackedMatMul>> packed,
                     std::vector<kernels::ExpertMatrices> experts, int64_t hidden, int64_t inter,
                     kernels::ExpertActivation act, std::vector<float> biases,
                     std::vector<graph::MatMulNBitsInfo> info)
      : where_(std::move(where)),
        routing_(routing),
        packed_(std::move(packed)),
        biases_(std::move(biases)),
        ffn_(std::move(experts), hidden, inter, act),
        hidden_(hidden),
        info_(std::move(info)) {
    for (const auto& p : packed_) bytes_ += p->packed_bytes();
  }

  void infer(const OpArgs& a) const override {
    const Shape& s = a.in[0]->shape;
    const Shape& r = a.in[1]->shape;
    NBITS_CHECK(s.rank >= 1 && s[s.rank - 1] == hidden_, where_, ": input X ", s.str(),
                " must end in hidden_size=", hidden_);
    NBITS_CHECK(r.rank >= 1 && r[r.rank - 1] == routing_.n_expert &&
                    a.in[1]->numel() / routing_.n_expert == a.in[0]->numel() / hidden_,
                where_, ": router logits ", r.str(), " must be one row of n_expert=", routing_.n_expert,
                " per row of X ", s.str());
    a.out[0]->shape = s;
  }

  void run(const OpArgs& a, RunContext& ctx) const override {
    const int64_t rows = a.in[0]->numel() / hidden_, k = routing_.k;
    thread_local std::vector<int32_t> ids;
    thread_local std::vector<float> weights;
    ids.resize(static_cast<size_t>(rows * k));
    weights.resize(static_cast<size_t>(rows * k));
    kernels::route_experts(routing_, a.in[1]->as<const float>(), rows, ids.data(), weights.data());
    ffn_.run(a.in[0]->as<const float>(), rows, ids.data(), weights.data(), k, a.out[0]->as<float>(),
             ctx.pool);
  }

  const char* kernel_name(const OpArgs& /*a*/) const override { return ffn_.kernel_name(); }
  std::vector<graph::MatMulNBitsInfo> nbits_info() const override { return info_; }
  size_t packed_weight_bytes() const override { return bytes_; }
  // A step reads the k chosen experts of n_expert: on average k / n_expert of the packed bytes.
  size_t streamed_weight_bytes() const override {
    return static_cast<size_t>(static_cast<double>(bytes_) * static_cast<double>(routing_.k) /
                               static_cast<double>(routing_.n_expert));
  }
  bool reads_constant_at_run(size_t input) const override { return input <= 1; }

 private:
  std::string where_;
  kernels::ExpertRouting routing_;
  std::vector<std::unique_ptr<kernels::PackedMatMul>> packed_;
  std::vector<float> biases_;  // the experts' biases (ffn_'s matrices point into it; moved, not copied)
  kernels::ExpertFfn ffn_;
  int64_t hidden_;
  std::vector<graph::MatMulNBitsInfo> info_;
  size_t bytes_ = 0;
};

}  // namespace

std::unique_ptr<Op> make_mixture_of_experts(OpBuild& b) {
  const onnx::Node& n = b.node;
  kernels::ExpertRouting routing;
  routing.n_expert = n.attr_int_required("n_expert");
  routing.k = n.attr_int_required("k");
  routing.normalize = n.attr_int("normalize", 0) != 0;
  routing.scale = n.attr_float("weight_scale", 0.0f);
  const std::string gating = n.attr_string("gating", "softmax");
  b.check(kernels::parse_gating(gating.c_str(), routing.gating), "gating '", gating,
          "' is not supported (softmax, sigmoid, softmax_after_topk)");
  const int64_t E = routing.n_expert, hidden = n.attr_int_required("hidden_size"),
                inter = n.attr_int_required("inter_size");
  b.check(E >= 1 && E <= 4096, "n_expert=", E, " must be in [1, 4096]");
  b.check(routing.k >= 1 && routing.k <= E, "k=", routing.k, " experts per token must be in [1, n_expert=", E,
          "]");
  b.check(hidden > 0 && inter > 0, "hidden_size=", hidden, " and inter_size=", inter, " must be positive");
  b.check(std::isfinite(routing.scale), "weight_scale must be finite");
  b.require_type(0, {DType::kF32}, "X");
  b.require_type(1, {DType::kF32}, "router_logits");
  kernels::ExpertActivation act;
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
  const int level = b.options.accuracy_level.value_or(static_cast<int>(n.attr_int("accuracy_level", 4)));
  const auto compute = level == 4 ? kernels::Compute::kInt8 : kernels::Compute::kFp32;

  // The three projections: [n_expert * N, K] weights, N x K = inter x hidden (gate, up) or
  // hidden x inter (down).
  struct Proj {
    const char* name;
    int64_t N, K;
    kernels::QuantizedMatrix w;  // every expert's rows
  };
  Proj proj[3] = {{"gate", inter, hidden, {}}, {"up", inter, hidden, {}}, {"down", hidden, inter, {}}};
  std::vector<graph::MatMulNBitsInfo> info;
  for (int p = 0; p < 3; ++p) {
    Proj& pr = proj[p];
    const size_t in0 = 2 + 4 * static_cast<size_t>(p);
    kernels::QuantizedMatrix& w = pr.w;
    w.N = E * pr.N;
    w.K = pr.K;
    w.bits = static_cast<int>(n.attr_int_required(std::string(pr.name) + "_bits"));
    w.block_size = static_cast<int>(n.attr_int_required(std::string(pr.name) + "_block_size"));
    b.check(w.bits == 4 || w.bits == 8, pr.name, "_bits=", w.bits, " is not supported (4 or 8)");
    b.check(w.block_size >= 16 && (w.block_size & (w.block_size - 1)) == 0, pr.name,
            "_block_size=", w.block_size, " must be a power of two >= 16");
    const int64_t kb = w.k_blocks(), blob = w.blob_bytes();
    const Tensor& B = b.constant(in0, "expert codes");
    b.require_type(in0, {DType::kU8}, "expert codes");
    b.check(B.numel() == w.N * kb * blob, pr.name, " codes '", n.inputs[in0], "' hold ", B.numel(),
            " bytes, expected n_expert=", E, " x N=", pr.N, " x k_blocks=", kb, " x ", blob);
    w.codes = static_cast<const uint8_t*>(B.data);
    const Tensor& S = b.constant(in0 + 1, "expert scales");
    b.require_type(in0 + 1, {DType::kF32}, "expert scales");
    b.check(S.numel() == w.N * kb, pr.name, " scales '", n.inputs[in0 + 1], "' hold ", S.numel(),
            " values, expected ", w.N * kb);
    w.scales = static_cast<const float*>(S.data);
    if (b.has_input(in0 + 2)) {
      const Tensor& Z = b.constant(in0 + 2, "expert zero points");
      b.require_type(in0 + 2, {DType::kU8}, "expert zero points");
      b.check(Z.numel() == w.N * w.zp_row_bytes(), pr.name, " zero points hold ", Z.numel(),
              " bytes, expected ", w.N * w.zp_row_bytes());
      w.zero_points = static_cast<const uint8_t*>(Z.data);
    }
    if (b.has_input(in0 + 3)) {
      const Tensor& M = b.constant(in0 + 3, "expert block mins");
      b.require_type(in0 + 3, {DType::kF32}, "expert block mins");
      b.check(M.numel() == w.N * kb, pr.name, " block mins hold ", M.numel(), " values, expected ", w.N * kb);
      w.mins = static_cast<const float*>(M.data);
    }
    graph::MatMulNBitsInfo i;
    i.node = n.name + "/" + pr.name + "_experts";
    i.K = w.K, i.N = w.N, i.bits = w.bits, i.block_size = w.block_size, i.accuracy_level = level;
    i.zero_points = w.zero_points != nullptr;
    info.push_back(std::move(i));
  }

  // Optional biases, [n_expert, N] of each projection, copied into the op.
  std::vector<kernels::ExpertMatrices> experts(static_cast<size_t>(E));
  std::vector<float> biases;
  size_t offset[3] = {};
  for (int p = 0; p < 3; ++p) {
    const size_t in = 14 + static_cast<size_t>(p);
    offset[p] = biases.size();
    if (!b.has_input(in)) continue;
    const Tensor& t = b.constant(in, "expert biases");
    b.require_type(in, {DType::kF32}, "expert biases");
    b.check(t.numel() == E * proj[p].N, proj[p].name, " biases '", n.inputs[in], "' hold ", t.numel(),
            " values, expected n_expert=", E, " x ", proj[p].N);
    biases.insert(biases.end(), t.as<const float>(), t.as<const float>() + t.numel());
  }
  for (int p = 0; p < 3; ++p) {
    if (!b.has_input(14 + static_cast<size_t>(p))) continue;
    for (int64_t e = 0; e < E; ++e) {
      const float* v = biases.data() + offset[p] + e * proj[p].N;
      kernels::ExpertMatrices& x = experts[static_cast<size_t>(e)];
      (p == 0 ? x.gate_bias : p == 1 ? x.up_bias : x.down_bias) = v;
    }
  }

  // Each expert's slice of each projection, packed (the slices' source pages released as packed).
  std::vector<std::unique_ptr<kernels::PackedMatMul>> packed;
  kernels::PackOptions options;
  options.fp16_scales = b.options.fp16_scales;
  options.pool = b.pool;
  // GGUF K-quants at about the file's size where decode is bandwidth-bound (kernels::PackOptions).
  options.file_size_formats(b.pool != nullptr ? b.pool->num_threads() : 1);
  for (int p = 0; p < 3; ++p) {
    const Proj& pr = proj[p];
    size_t bytes = 0;
    for (int64_t e = 0; e < E; ++e) {
      kernels::QuantizedMatrix w = pr.w;
      const int64_t kb = w.k_blocks(), r0 = e * pr.N;
      w.N = pr.N;
      w.codes += r0 * kb * w.blob_bytes();
      w.scales += r0 * kb;
      if (w.zero_points != nullptr) w.zero_points += r0 * w.zp_row_bytes();
      if (w.mins != nullptr) w.mins += r0 * kb;
      options.rows_consumed = [&](int64_t rows) {  // where they view the mapped file
        if (!b.release_pages) return;
        b.release_pages(w.codes, static_cast<size_t>(rows * kb * w.blob_bytes()));
        b.release_pages(w.scales, static_cast<size_t>(rows * kb) * sizeof(float));
      };
      packed.push_back(kernels::make_matmul_nbits(w, compute, options));
      bytes += packed.back()->packed_bytes();
      const kernels::PackedMatMul* m = packed.back().get();
      kernels::ExpertMatrices& x = experts[static_cast<size_t>(e)];
      (p == 0 ? x.gate : p == 1 ? x.up : x.down) = m;
    }
    info[static_cast<size_t>(p)].kernel = packed.back()->kernel_name(1);
    info[static_cast<size_t>(p)].prefill_kernel = packed.back()->kernel_name(16);
    info[static_cast<size_t>(p)].packed_bytes = bytes;
  }
  b.set_outputs(DType::kF32);
  return std::make_unique<MixtureOfExpertsOp>(b.where(), routing, std::move(packed), std::move(experts),
                                              hidden, inter, act, std::move(biases), std::move(info));
}

}  // namespace nbits::ops
