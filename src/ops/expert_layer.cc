#include "ops/expert_layer.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "ops/op_util.h"

namespace nbits::ops {
namespace {

using graph::OpArgs;
using graph::RunContext;

class ExpertLayerOp final : public Op {
 public:
  ExpertLayerOp(std::string where, kernels::ExpertRouting routing,
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

std::unique_ptr<Op> make_expert_layer(OpBuild& b, ExpertLayerSpec spec) {
  const int64_t E = spec.routing.n_expert, hidden = spec.hidden, inter = spec.inter;
  b.check(E >= 1 && E <= 4096, "n_expert=", E, " must be in [1, 4096]");
  b.check(spec.routing.k >= 1 && spec.routing.k <= E, "k=", spec.routing.k,
          " experts per token must be in [1, n_expert=", E, "]");
  b.check(hidden > 0 && inter > 0, "hidden_size=", hidden, " and inter_size=", inter, " must be positive");
  b.check(std::isfinite(spec.routing.scale), "the routing weight scale must be finite");
  const auto compute = spec.accuracy_level == 4 ? kernels::Compute::kInt8 : kernels::Compute::kFp32;
  const int64_t dims[3][2] = {{inter, hidden}, {inter, hidden}, {hidden, inter}};  // N, K

  // The biases, [n_expert, N] of each projection, held by the op.
  std::vector<kernels::ExpertMatrices> experts(static_cast<size_t>(E));
  std::vector<float> biases;
  size_t offset[3] = {};
  for (int p = 0; p < 3; ++p) {
    const ExpertProjection& pr = spec.proj[p];
    offset[p] = biases.size();
    b.check(pr.bias.empty() || static_cast<int64_t>(pr.bias.size()) == E * dims[p][0], pr.name,
            " biases hold ", pr.bias.size(), " values, expected n_expert=", E, " x ", dims[p][0]);
    biases.insert(biases.end(), pr.bias.begin(), pr.bias.end());
  }
  for (int p = 0; p < 3; ++p) {
    if (spec.proj[p].bias.empty()) continue;
    for (int64_t e = 0; e < E; ++e) {
      const float* v = biases.data() + offset[p] + e * dims[p][0];
      kernels::ExpertMatrices& x = experts[static_cast<size_t>(e)];
      (p == 0 ? x.gate_bias : p == 1 ? x.up_bias : x.down_bias) = v;
    }
  }

  // Each expert's slice of each projection, packed (the slices' source pages released as packed).
  std::vector<std::unique_ptr<kernels::PackedMatMul>> packed;
  std::vector<graph::MatMulNBitsInfo> info;
  kernels::PackOptions options;
  options.fp16_scales = b.options.fp16_scales;
  options.pool = b.pool;
  // GGUF K-quants at about the file's size where decode is bandwidth-bound (kernels::PackOptions).
  options.file_size_formats(b.pool != nullptr ? b.pool->num_threads() : 1);
  for (int p = 0; p < 3; ++p) {
    const ExpertProjection& pr = spec.proj[p];
    const int64_t N = dims[p][0], K = dims[p][1];
    b.check(static_cast<bool>(pr.quantized) || static_cast<bool>(pr.floats), pr.name, " experts: no weights");
    graph::MatMulNBitsInfo i;
    i.node = b.node.name + "/" + pr.name + "_experts";
    i.K = K, i.N = E * N, i.accuracy_level = spec.accuracy_level;
    size_t bytes = 0;
    for (int64_t e = 0; e < E; ++e) {
      if (pr.quantized) {
        const kernels::QuantizedMatrix w = pr.quantized(e);
        b.check(w.K == K && w.N == N, pr.name, " expert ", e, " is ", w.N, " x ", w.K, ", expected ", N,
                " x ", K);
        packed.push_back(kernels::make_matmul_nbits(w, compute, options));
        i.bits = w.bits, i.block_size = w.block_size, i.zero_points = w.zero_points != nullptr;
      } else {
        packed.push_back(kernels::make_float_x16_matmul(
            kernels::pack_float_x16(pr.floats(e), K, N, pr.float_elem, b.pool, true)));
        i.bits = pr.float_elem == kernels::X16Float::kF32 ? 32 : 16;
      }
      if (pr.done) pr.done(e);
      bytes += packed.back()->packed_bytes();
      kernels::ExpertMatrices& x = experts[static_cast<size_t>(e)];
      (p == 0 ? x.gate : p == 1 ? x.up : x.down) = packed.back().get();
    }
    i.kernel = packed.back()->kernel_name(1);
    i.prefill_kernel = packed.back()->kernel_name(16);
    i.packed_bytes = bytes;
    info.push_back(std::move(i));
  }
  b.set_outputs(DType::kF32);
  return std::make_unique<ExpertLayerOp>(b.where(), spec.routing, std::move(packed), std::move(experts),
                                         hidden, inter, spec.act, std::move(biases), std::move(info));
}

}  // namespace nbits::ops
