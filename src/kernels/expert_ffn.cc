#include "kernels/expert_ffn.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>

#include "base/error.h"
#include "kernels/vector_ops.h"

namespace nbits::kernels {

void expert_activation(const ExpertActivation& act, float* gate, float* up, float* h, int64_t n) {
  if (act.kind == ExpertActivation::Kind::kSilu) {
    vec_silu_mul(gate, up, h, n);
    return;
  }
  // g' sigmoid(alpha g') (u' + beta) = silu(alpha g') * ((u' + beta) / alpha): vec_silu_mul's
  // vectorised sigmoid on the scaled gate.
  const float a = act.alpha, b = act.beta, lim = act.limit, inv = 1.0f / act.alpha;
  for (int64_t i = 0; i < n; ++i) {
    gate[i] = a * std::min(gate[i], lim);
    up[i] = (std::clamp(up[i], -lim, lim) + b) * inv;
  }
  vec_silu_mul(gate, up, h, n);
}

ExpertFfn::ExpertFfn(std::vector<ExpertMatrices> experts, int64_t hidden, int64_t inter, ExpertActivation act)
    : experts_(std::move(experts)), hidden_(hidden), inter_(inter), act_(act) {
  NBITS_CHECK(!experts_.empty() && hidden_ > 0 && inter_ > 0, "ExpertFfn: ", experts_.size(), " experts of ",
              hidden_, " x ", inter_);
  gate_up_.reserve(experts_.size());
  for (const ExpertMatrices& e : experts_) {
    NBITS_CHECK(e.gate != nullptr && e.up != nullptr && e.down != nullptr,
                "ExpertFfn: an expert lacks a matrix");
    gate_up_.emplace_back(std::vector<const PackedMatMul*>{e.gate, e.up},
                          std::vector<int64_t>{inter_, inter_});
  }
  const MatMulGroup two({experts_[0].gate, experts_[0].up, experts_[0].gate, experts_[0].up},
                        {inter_, inter_, inter_, inter_});
  kernel_ = std::string(two.shared() ? "group_" : "") + experts_[0].gate->kernel_name(1);
}

void ExpertFfn::run_one(const float* x, const int32_t* ids, const float* weights, int64_t k, float* y,
                        ThreadPool& pool) const {
  thread_local std::vector<float> gu, h, t;
  thread_local std::vector<const PackedMatMul*> mats;
  thread_local std::vector<float*> outs;
  thread_local std::vector<const float*> biases;
  thread_local std::vector<int64_t> widths;
  thread_local std::vector<int32_t> slot;
  const size_t n2 = static_cast<size_t>(2 * k);
  gu.resize(n2 * static_cast<size_t>(inter_));
  h.resize(static_cast<size_t>(k * inter_));
  t.resize(static_cast<size_t>(k * hidden_));
  // Slots in expert-index order (the order a batch of rows adds them in).
  slot.resize(static_cast<size_t>(k));
  std::iota(slot.begin(), slot.end(), 0);
  std::sort(slot.begin(), slot.end(), [&](int32_t a, int32_t b) { return ids[a] < ids[b]; });
  mats.clear();
  outs.clear();
  biases.clear();
  for (int64_t j = 0; j < k; ++j) {
    const ExpertMatrices& e = experts_[static_cast<size_t>(ids[slot[static_cast<size_t>(j)]])];
    mats.push_back(e.gate);
    mats.push_back(e.up);
    biases.push_back(e.gate_bias);
    biases.push_back(e.up_bias);
    outs.push_back(gu.data() + (2 * j) * inter_);
    outs.push_back(gu.data() + (2 * j + 1) * inter_);
  }
  widths.assign(n2, inter_);
  // Gate and up of every chosen expert: one prepared A, one fork/join.
  MatMulGroup(mats, widths).run(x, 1, outs, biases, pool);
  for (int64_t j = 0; j < k; ++j)
    expert_activation(act_, outs[static_cast<size_t>(2 * j)], outs[static_cast<size_t>(2 * j + 1)],
                      h.data() + j * inter_, inter_);
  // Raw pointers: the thread_local vectors named inside a task would be the worker's own.
  const float* hs = h.data();
  float* ts = t.data();
  const int32_t* order = slot.data();
  const auto down = [&, hs, ts, order](int64_t j) {
    const ExpertMatrices& e = experts_[static_cast<size_t>(ids[order[j]])];
    e.down->run(hs + j * inter_, 1, ts + j * hidden_, e.down_bias, pool);
  };
  if (k >= pool.num_threads()) {
    // One fork/join for all down projections: each task runs whole experts (their kernels then
    // run inline on that thread, the same panels in the same order: the same bits).
    pool.parallel_for(k, down);
  } else {
    for (int64_t j = 0; j < k; ++j) down(j);
  }
  std::memset(y, 0, static_cast<size_t>(hidden_) * sizeof(float));
  for (int64_t j = 0; j < k; ++j) {
    const float w = weights[slot[static_cast<size_t>(j)]];
    const float* tj = t.data() + j * hidden_;
    for (int64_t c = 0; c < hidden_; ++c) y[c] += w * tj[c];
  }
}

void ExpertFfn::run(const float* x, int64_t rows, const int32_t* ids, const float* weights, int64_t k,
                    float* y, ThreadPool& pool) const {
  NBITS_CHECK(k >= 1 && k <= n_expert(), "ExpertFfn: k=", k, " of ", n_expert(), " experts");
  const int64_t E = n_expert();
  for (int64_t i = 0; i < rows * k; ++i)
    NBITS_CHECK(ids[i] >= 0 && ids[i] < E, "ExpertFfn: expert id ", ids[i], " outside [0, ", E, ")");
  if (rows <= 0) return;
  if (rows == 1) {
    run_one(x, ids, weights, k, y, pool);
    return;
  }
  // Rows grouped by expert (counting sort): members[start[e] .. start[e + 1]) = (row * k + slot).
  thread_local std::vector<int64_t> start, members, fill;
  thread_local std::vector<float> xe, he, ye, ge, ue;
  start.assign(static_cast<size_t>(E + 1), 0);
  for (int64_t i = 0; i < rows * k; ++i) ++start[static_cast<size_t>(ids[i] + 1)];
  for (int64_t e = 0; e < E; ++e) start[static_cast<size_t>(e + 1)] += start[static_cast<size_t>(e)];
  fill.assign(start.begin(), start.end() - 1);
  members.resize(static_cast<size_t>(rows * k));
  for (int64_t i = 0; i < rows * k; ++i)
    members[static_cast<size_t>(fill[static_cast<size_t>(ids[i])]++)] = i;
  std::memset(y, 0, static_cast<size_t>(rows * hidden_) * sizeof(float));
  for (int64_t e = 0; e < E; ++e) {
    const int64_t b = start[static_cast<size_t>(e)], n = start[static_cast<size_t>(e + 1)] - b;
    if (n == 0) continue;
    xe.resize(static_cast<size_t>(n * hidden_));
    he.resize(static_cast<size_t>(n * inter_));
    ye.resize(static_cast<size_t>(n * hidden_));
    for (int64_t i = 0; i < n; ++i) {
      const int64_t row = members[static_cast<size_t>(b + i)] / k;
      std::memcpy(xe.data() + i * hidden_, x + row * hidden_, static_cast<size_t>(hidden_) * sizeof(float));
    }
    const ExpertMatrices& ex = experts_[static_cast<size_t>(e)];
    if (act_.kind == ExpertActivation::Kind::kSilu) {
      gate_up_[static_cast<size_t>(e)].run_silu_mul(xe.data(), n, he.data(), ex.gate_bias, ex.up_bias, pool);
    } else {  // gate and up, then the activation row by row (as one row does)
      ge.resize(static_cast<size_t>(n * inter_));
      ue.resize(static_cast<size_t>(n * inter_));
      float* gu[2] = {ge.data(), ue.data()};
      const float* bias[2] = {ex.gate_bias, ex.up_bias};
      gate_up_[static_cast<size_t>(e)].run(xe.data(), n, gu, bias, pool);
      for (int64_t i = 0; i < n; ++i)
        expert_activation(act_, ge.data() + i * inter_, ue.data() + i * inter_, he.data() + i * inter_,
                          inter_);
    }
    ex.down->run(he.data(), n, ye.data(), ex.down_bias, pool);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t m = members[static_cast<size_t>(b + i)], row = m / k;
      const float w = weights[m];
      float* yr = y + row * hidden_;
      const float* t = ye.data() + i * hidden_;
      for (int64_t c = 0; c < hidden_; ++c) yr[c] += w * t[c];
    }
  }
}

}  // namespace nbits::kernels
