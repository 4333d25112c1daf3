// Grouped MatMulNBits: several packed weights with the same K multiplied by one activation
// A [M, K] (a layer's q/k/v projections, the MLP's gate and up). When every weight runs the
// panel driver (kernels/panel_matmul.h) with the same preparation of A (CompInt8: the same
// activation quantizer; CompFp32: rows padded to whole blocks, block sums for M = 1), A is
// prepared once and ONE parallel section covers the panels of all weights (a balanced split of
// their concatenation, each panel written into its own output). The micro-kernels, the prepared
// A and each panel's arithmetic are those of a separate run(), so the outputs are bitwise what
// running each weight alone gives. Any other weight (the reference sets, a set with its own A
// layout such as IME tiles, a min term added after, a mix of CompInt8 and CompFp32) makes the
// group run weight by weight through run().
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/matmul_nbits.h"
#include "kernels/panel_matmul.h"

namespace nbits::kernels {

// The rows of A as the panel kernels read them (calling thread's scratch): CompInt8 codes,
// scales and integer sums; CompFp32 rows padded to whole blocks (stride lda) and, for M = 1,
// the sums of the row's blocks.
struct PreparedRows {
  const int8_t* qa = nullptr;
  const float* sa = nullptr;
  const int32_t* qsum = nullptr;
  const float* a = nullptr;
  int64_t lda = 0;
  const float* asum = nullptr;
};

// What a packed weight offers to a group (implemented by the panel driver's matrices).
class PanelGroupMember {
 public:
  virtual ~PanelGroupMember() = default;
  // Identifies how A is prepared (the CompInt8 quantizer; one tag for CompFp32), or null when
  // the weight cannot share it (its own A layout): weights with one key, K and block share A.
  virtual const void* group_key() const = 0;
  virtual int64_t group_k() const = 0;
  virtual int group_block() const = 0;
  virtual int64_t group_n() const = 0;
  virtual int64_t group_panels() const = 0;
  // Panels per task below which waking another thread does not pay (the driver's policy).
  virtual int64_t group_min_panels(int64_t M) const = 0;
  // Prepares the M rows of A in the calling thread's scratch, as run() does.
  virtual PreparedRows group_prepare(const float* A, int64_t M, ThreadPool& pool) const = 0;
  // Panels [p0, p1) of Y (row stride ldy; Y and bias indexed by absolute column), as run() does.
  virtual void group_panels_run(const PreparedRows& a, int64_t M, int64_t p0, int64_t p1, float* Y,
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
