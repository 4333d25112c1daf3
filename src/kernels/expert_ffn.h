// The routed feed-forward of a mixture-of-experts layer: each row runs only the experts its
// router chose, y[r] = sum_j w[r, j] * down_e(act(gate_e(x_r), up_e(x_r))), e = ids[r, j], each
// projection with its expert's bias where it has one (gpt-oss); act is SwiGLU (silu(g) * u) or
// gpt-oss's clamped SwiGLU (ExpertActivation).
//
// Scheduling: one row (decode) runs the gate and up projections of all its k experts as ONE
// MatMulGroup (A prepared once, one fork/join over the panels of the 2k weights), then the k down
// projections in one more fork/join (whole experts per task when k >= the threads); several rows (prefill,
// batched decode) are grouped by expert: the rows of expert e are gathered, its gate/up (with the SiLU
// epilogue) and down run once on all of them, and the results are added into their rows. So each chosen
// expert's weights are read once per step, and the other experts' not at all.
//
// A row's result does not depend on the other rows: its experts' terms are added in expert-index
// order, each a GEMM row equal to the GEMV of that row (the kernels' contract), so a row decoded
// alone and inside a batch gives the same bits.
#pragma once

#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/matmul_group.h"
#include "kernels/matmul_nbits.h"

namespace nbits::kernels {

// One expert's projections (not owned): gate and up [inter, hidden], down [hidden, inter], and
// their biases (inter, inter and hidden floats; null: none).
struct ExpertMatrices {
  const PackedMatMul* gate = nullptr;
  const PackedMatMul* up = nullptr;
  const PackedMatMul* down = nullptr;
  const float* gate_bias = nullptr;
  const float* up_bias = nullptr;
  const float* down_bias = nullptr;
};

// The activation between gate/up and down: kSilu, h = silu(g) * u; kSwigluOai (gpt-oss,
// ggml_swiglu_oai, ORT MoE's swiglu with activation_alpha / activation_beta / swiglu_limit), with
// g' = min(g, limit) and u' = clamp(u, -limit, limit): h = g' * sigmoid(alpha * g') * (u' + beta)
// (limit +inf: no clamp).
struct ExpertActivation {
  enum class Kind { kSilu, kSwigluOai };
  Kind kind = Kind::kSilu;
  float alpha = 1.702f, beta = 1.0f, limit = 7.0f;
};

// h [n] from gate and up [n] by the activation (gate and up are overwritten as scratch).
void expert_activation(const ExpertActivation& act, float* gate, float* up, float* h, int64_t n);

class ExpertFfn {
 public:
  ExpertFfn(std::vector<ExpertMatrices> experts, int64_t hidden, int64_t inter, ExpertActivation act = {});

  int64_t n_expert() const { return static_cast<int64_t>(experts_.size()); }

  // x [rows, hidden], ids and weights [rows, k] (ids in [0, n_expert), distinct per row) ->
  // y [rows, hidden] (overwritten).
  void run(const float* x, int64_t rows, const int32_t* ids, const float* weights, int64_t k, float* y,
           ThreadPool& pool) const;

  // The gate/up group's kernel name for one row ("group_qgemv_...").
  const char* kernel_name() const { return kernel_.c_str(); }

 private:
  void run_one(const float* x, const int32_t* ids, const float* weights, int64_t k, float* y,
               ThreadPool& pool) const;

  std::vector<ExpertMatrices> experts_;
  std::vector<MatMulGroup> gate_up_;  // per expert: {gate, up}, for run_silu_mul
  int64_t hidden_, inter_;
  ExpertActivation act_;
  std::string kernel_;
};

}  // namespace nbits::kernels
