// MatMulGroup: one activation quantization and one fork/join for several weights.
#include "kernels/matmul_group.h"

#include <algorithm>
#include <utility>

#include "base/error.h"
#include "kernels/vector_ops.h"

namespace nbits::kernels {
namespace {

// Floats of the up tile one task of run_silu_mul keeps per chunk (M rows x chunk columns).
constexpr int64_t kSiluTileFloats = 8192;

}  // namespace

MatMulGroup::MatMulGroup(std::vector<const PackedMatMul*> weights, std::vector<int64_t> n)
    : weights_(std::move(weights)), n_(std::move(n)) {
  NBITS_CHECK(!weights_.empty() && n_.size() == weights_.size(), "MatMulGroup: ", weights_.size(),
              " weights and ", n_.size(), " output widths");
  // Only where the panel driver's paths are tested against the grouped one (x86 here); other
  // ISAs run weight by weight (same results, one fork/join per weight).
#if defined(NBITS_ARCH_X86)
  bool shared = weights_.size() >= 2;
  for (const PackedMatMul* w : weights_) {
    const auto* m = dynamic_cast<const PanelGroupMember*>(w);
    shared = shared && m != nullptr && m->group_key() != nullptr;
    if (!shared) break;
    const PanelGroupMember* first = members_.empty() ? m : members_[0];
    shared = m->group_key() == first->group_key() && m->group_k() == first->group_k() &&
             m->group_block() == first->group_block() && m->group_n() == n_[members_.size()];
    members_.push_back(m);
  }
  shared_ = shared;
#endif
  if (!shared_) {
    members_.clear();
    return;
  }
  first_panel_.push_back(0);
  for (const PanelGroupMember* m : members_) first_panel_.push_back(first_panel_.back() + m->group_panels());
}

void MatMulGroup::run(const float* A, int64_t M, std::span<float* const> Y,
                      std::span<const float* const> bias, ThreadPool& pool) const {
  NBITS_CHECK(Y.size() == weights_.size() && bias.size() == weights_.size(), "MatMulGroup: ", Y.size(),
              " outputs and ", bias.size(), " biases for ", weights_.size(), " weights");
  if (M <= 0) return;
  if (!shared_) {
    for (size_t i = 0; i < weights_.size(); ++i) weights_[i]->run(A, M, Y[i], bias[i], pool);
    return;
  }
  const PreparedRows a = members_[0]->group_prepare(A, M, pool);
  int64_t align = members_[0]->group_min_panels(M);
  for (const PanelGroupMember* m : members_) align = std::min(align, m->group_min_panels(M));
  // Contiguous ranges of the concatenated panels: a task may span the end of one weight and
  // the start of the next.
  pool.parallel_range(first_panel_.back(), align, [&](int64_t b, int64_t e) {
    for (size_t i = 0; i < members_.size(); ++i) {
      const int64_t s = std::max(b, first_panel_[i]), t = std::min(e, first_panel_[i + 1]);
      if (s < t)
        members_[i]->group_panels_run(a, M, s - first_panel_[i], t - first_panel_[i], Y[i], n_[i], bias[i]);
    }
  });
}

void MatMulGroup::run_silu_mul(const float* A, int64_t M, float* Y, const float* gate_bias,
                               const float* up_bias, ThreadPool& pool) const {
  NBITS_CHECK(weights_.size() == 2 && n_[0] == n_[1], "MatMulGroup::run_silu_mul: ", weights_.size(),
              " weights, not gate and up of one width");
  if (M <= 0) return;
  if (!shared_) {
    // Weight by weight: the up product in the calling thread's scratch.
    thread_local std::vector<float> up_rows;
    const size_t numel = static_cast<size_t>(M * n_[0]);
    if (up_rows.size() < numel) up_rows.resize(numel);
    weights_[0]->run(A, M, Y, gate_bias, pool);
    weights_[1]->run(A, M, up_rows.data(), up_bias, pool);
    const float* u = up_rows.data();
    pool.parallel_range(static_cast<int64_t>(numel), 8192,
                        [&](int64_t s, int64_t e) { vec_silu_mul(Y + s, u + s, Y + s, e - s); });
    return;
  }
  const PanelGroupMember& gate = *members_[0];
  const PanelGroupMember& up = *members_[1];
  const int64_t N = n_[0];
  const PreparedRows a = gate.group_prepare(A, M, pool);
  const int64_t align = std::min(gate.group_min_panels(M), up.group_min_panels(M));
  const int64_t chunk = std::clamp<int64_t>(kSiluTileFloats / (kGroupPanelCols * M), 1, 64);
  pool.parallel_range(gate.group_panels(), align, [&](int64_t b, int64_t e) {
    thread_local std::vector<float> tile;  // this task's thread: no allocation after the first call
    const size_t want = static_cast<size_t>(M * chunk * kGroupPanelCols);
    if (tile.size() < want) tile.resize(want);
    for (int64_t c0 = b; c0 < e; c0 += chunk) {
      const int64_t c1 = std::min(e, c0 + chunk), n0 = c0 * kGroupPanelCols;
      const int64_t width = (c1 - c0) * kGroupPanelCols, cols = std::min(N, c1 * kGroupPanelCols) - n0;
      gate.group_panels_run(a, M, c0, c1, Y, N, gate_bias);
      // The kernels index Y by absolute column: the tile stands for columns [n0, n0 + width)
      // with row stride width, so they write up[m][n0 + j] to tile[m * width + j].
      up.group_panels_run(a, M, c0, c1, tile.data() - n0, width, up_bias);
      for (int64_t m = 0; m < M; ++m) {
        float* y = Y + m * N + n0;
        vec_silu_mul(y, tile.data() + m * width, y, cols);
      }
    }
  });
}

}  // namespace nbits::kernels
