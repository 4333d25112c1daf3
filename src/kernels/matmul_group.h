// Grouped MatMulNBits: several packed weights with the same K multiplied by one activation
// A [M, K] (a layer's q/k/v projections, the MLP's gate and up). When every weight runs the
// panel driver's CompInt8 path with the same activation quantizer (kernels/panel_matmul.h),
// A is quantized once and ONE parallel section covers the panels of all weights (a balanced
// split of their concatenation, each panel written into its own output). The micro-kernels,
// the quantization of A and each panel's arithmetic are those of a separate run(), so the
// outputs are bitwise what running each weight alone gives. Any other weight (fp32 compute,
// the reference sets, a set with its own A layout such as IME tiles, a min term added after)
// makes the group run weight by weight through run().
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/matmul_nbits.h"
#include "kernels/panel_matmul.h"

namespace nbits::kernels {

// The rows of A as the CompInt8 panel kernels read them (calling thread's scratch).
struct QuantizedRows {
  const int8_t* qa = nullptr;
  const float* sa = nullptr;
  const int32_t* qsum = nullptr;
};

// What a packed weight offers to a group (implemented by the panel driver's CompInt8 matrices).
class PanelGroupMember {
 public:
  virtual ~PanelGroupMember() = default;
  // The activation quantizer, or null when the weight cannot share one (its own A layout).
  virtual QuantizeRowFn group_quantizer() const = 0;
  virtual int64_t group_k() const = 0;
  virtual int group_block() const = 0;
  virtual int64_t group_n() const = 0;
  virtual int64_t group_panels() const = 0;
  // Panels per task below which waking another thread does not pay (the driver's policy).
  virtual int64_t group_min_panels(int64_t M) const = 0;
  // Quantizes the M rows of A into the calling thread's scratch, as run() does.
  virtual QuantizedRows group_quantize(const float* A, int64_t M, ThreadPool& pool) const = 0;
  // Panels [p0, p1) of Y (row stride ldy; Y and bias indexed by absolute column), as run() does.
  virtual void group_panels_run(const QuantizedRows& a, int64_t M, int64_t p0, int64_t p1, float* Y,
                                int64_t ldy, const float* bias) const = 0;
};

// Columns of one panel (quant::PackedX16 and quant::PackedPanel16).
inline constexpr int64_t kGroupPanelCols = 16;

class MatMulGroup {
 public:
  // The weights (not owned; they outlive the group), all with the same K, and their N.
  MatMulGroup(std::vector<const PackedMatMul*> weights, std::vector<int64_t> n);

  // True when a run quantizes A once and forks the pool once for all weights.
  bool shared() const { return shared_; }
  size_t size() const { return weights_.size(); }

  // Y[i] [M, N_i] = A [M, K] x W_i^T (+ bias[i], null for none), for every weight i.
  void run(const float* A, int64_t M, std::span<float* const> Y, std::span<const float* const> bias,
           ThreadPool& pool) const;

  // A group of two weights with the same N (gate, up): Y [M, N] = silu(gate) * up, with
  // vec_silu_mul (the SiluMul op's function) on tiles of both computed in the same task: no
  // gate or up tensor. Bitwise run() followed by vec_silu_mul.
  void run_silu_mul(const float* A, int64_t M, float* Y, const float* gate_bias, const float* up_bias,
                    ThreadPool& pool) const;

 private:
  std::vector<const PackedMatMul*> weights_;
  std::vector<int64_t> n_;
  std::vector<const PanelGroupMember*> members_;  // one per weight when shared_
  std::vector<int64_t> first_panel_;              // concatenated panel index of weight i; back = total
  bool shared_ = false;
};

}  // namespace nbits::kernels
