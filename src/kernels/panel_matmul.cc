#include "kernels/panel_matmul.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/matmul_group.h"
#include "quant/quantize_a.h"

namespace nbits::kernels {

void quantize_row_blocks_isum(const float* a, int64_t K, int block, int8_t* qa, float* sa, int32_t* qsum) {
  quant::quantize_row_blocks(a, K, block, qa, sa);
  const int64_t kb = (K + block - 1) / block;
  for (int64_t b = 0; b < kb; ++b) {
    int32_t s = 0;
    for (int j = 0; j < block; ++j) s += qa[b * block + j];
    qsum[b] = s;
  }
}

namespace {

template <typename T>
void grow(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

// Below this many packed bytes per task, waking another thread costs more
// than it saves (and on a busy machine a descheduled worker costs milliseconds).
constexpr int64_t kMinBytesPerTask = 64 * 1024;
// Readable bytes past the last quantized row (kernels may load a whole vector there).
constexpr size_t kRowSlack = 64;

// Splits the panels of `w` over the pool in contiguous ranges of at least kMinBytesPerTask
// of weights (scaled down by M, since each panel is then used M times): fn(p0, p1).
template <class Pack>
int64_t min_panels_per_task(const Pack& w, int64_t M) {
  const int64_t panel_bytes =
      std::max<int64_t>(1, static_cast<int64_t>(w.data.size()) / std::max<int64_t>(1, w.panels));
  return std::max<int64_t>(1, kMinBytesPerTask / (panel_bytes * std::max<int64_t>(1, M)));
}

template <class Pack, typename F>
void over_panels(const Pack& w, int64_t M, ThreadPool& pool, F&& fn) {
  pool.parallel_range(w.panels, min_panels_per_task(w, M), [&](int64_t p0, int64_t p1) { fn(p0, p1); });
}

// Activation scratch shared by every matrix run from the calling thread. A step
// runs its matmuls one after another, so one buffer grown to the largest M x K
// serves them all, instead of one per matrix (about 40 MB for Qwen2.5-0.5B at
// M = 128). Pool workers only read and write it through the caller's run().
struct Scratch {
  std::vector<int8_t> qa;
  std::vector<float> sa;
  std::vector<int32_t> qsum;
  std::vector<uint8_t> tiles;
  std::vector<float> pad, asum;
};

Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

template <class Pack>
class PanelInt8 final : public PackedMatMul, public PanelGroupMember {
 public:
  PanelInt8(Pack w, const PanelInt8Kernels<Pack>& k) : w_(std::move(w)), k_(k) {}

  void run(const float* A, int64_t M, float* Y, const float* bias, ThreadPool& pool) const override {
    if (M <= 0) return;
    const PreparedRows a = quantize_rows(A, M, pool);
    over_panels(w_, M, pool, [&](int64_t p0, int64_t p1) { group_panels_run(a, M, p0, p1, Y, w_.N, bias); });
  }
  const char* kernel_name(int64_t M) const override {
    return M == 1 ? k_.gemv_name : k_.small(M) ? k_.gemm_small_name : k_.gemm_name;
  }
  size_t packed_bytes() const override { return w_.data.size(); }

  // PanelGroupMember (kernels/matmul_group.h): a set with its own A layout (tiles) shares none.
  const void* group_key() const override {
    return k_.tile_row != nullptr ? nullptr : reinterpret_cast<const void*>(k_.quantize);
  }
  int64_t group_k() const override { return w_.K; }
  int group_block() const override { return w_.block; }
  int64_t group_n() const override { return w_.N; }
  int64_t group_panels() const override { return w_.panels; }
  int64_t group_min_panels(int64_t M) const override { return min_panels_per_task(w_, M); }
  PreparedRows group_prepare(const float* A, int64_t M, ThreadPool& pool) const override {
    return quantize_rows(A, M, pool);
  }
  void group_panels_run(const PreparedRows& a, int64_t M, int64_t p0, int64_t p1, float* Y, int64_t ldy,
                        const float* bias) const override {
    if (M == 1)
      k_.gemv(w_, p0, p1, a.qa, a.sa, a.qsum, Y, bias);
    else
      (k_.small(M) ? k_.gemm_small : k_.gemm)(w_, p0, p1, M, a.qa, a.sa, a.qsum, Y, ldy, bias);
  }

 private:
  // The rows of A quantized into the calling thread's scratch (in parallel when M > 1), then
  // re-laid out as A tiles when the set has them (qa then points at the tiles).
  PreparedRows quantize_rows(const float* A, int64_t M, ThreadPool& pool) const {
    const int64_t kb = w_.k_blocks, kp = kb * w_.block;
    Scratch& s = scratch();
    grow(s.qa, static_cast<size_t>(M * kp) + kRowSlack);
    grow(s.sa, static_cast<size_t>(M * kb));
    grow(s.qsum, static_cast<size_t>(M * kb));
    int8_t* qa = s.qa.data();
    float* sa = s.sa.data();
    int32_t* qsum = s.qsum.data();
    auto quantize = [&](int64_t m) {
      k_.quantize(A + m * w_.K, w_.K, w_.block, qa + m * kp, sa + m * kb, qsum + m * kb);
    };
    if (M == 1) {
      quantize(0);
      return {.qa = qa, .sa = sa, .qsum = qsum};
    }
    if (k_.tile_row == nullptr) {
      pool.parallel_for(M, quantize);
      return {.qa = qa, .sa = sa, .qsum = qsum};
    }
    grow(s.tiles, k_.tiles_bytes(w_, M));
    uint8_t* tiles = s.tiles.data();
    pool.parallel_for(M, [&](int64_t m) {
      quantize(m);
      k_.tile_row(w_, m, qa + m * kp, sa + m * kb, qsum + m * kb, tiles);
    });
    return {.qa = reinterpret_cast<const int8_t*>(tiles), .sa = sa, .qsum = qsum};
  }

  Pack w_;
  PanelInt8Kernels<Pack> k_;
};

// The one key of every CompFp32 panel matrix: they prepare A alike (padding, block sums).
constexpr char kFp32RowsKey = 0;

template <class Pack>
class PanelFp32 final : public PackedMatMul, public PanelGroupMember {
 public:
  PanelFp32(Pack w, const PanelFp32Kernels<Pack>& k) : w_(std::move(w)), k_(k) {}

  void run(const float* A, int64_t M, float* Y, const float* bias, ThreadPool& pool) const override {
    if (M <= 0) return;
    const PreparedRows a = prepare_rows(A, M);
    over_panels(w_, M, pool, [&](int64_t p0, int64_t p1) { group_panels_run(a, M, p0, p1, Y, w_.N, bias); });
  }
  const char* kernel_name(int64_t M) const override { return M == 1 ? k_.gemv_name : k_.gemm_name; }
  size_t packed_bytes() const override { return w_.data.size(); }

  // PanelGroupMember (kernels/matmul_group.h).
  const void* group_key() const override { return &kFp32RowsKey; }
  int64_t group_k() const override { return w_.K; }
  int group_block() const override { return w_.block; }
  int64_t group_n() const override { return w_.N; }
  int64_t group_panels() const override { return w_.panels; }
  int64_t group_min_panels(int64_t M) const override { return min_panels_per_task(w_, M); }
  PreparedRows group_prepare(const float* A, int64_t M, ThreadPool& /*pool*/) const override {
    return prepare_rows(A, M);
  }
  void group_panels_run(const PreparedRows& a, int64_t M, int64_t p0, int64_t p1, float* Y, int64_t ldy,
                        const float* bias) const override {
    if (M == 1)
      k_.gemv(w_, p0, p1, a.a, a.asum, Y, bias);
    else
      k_.gemm(w_, p0, p1, M, a.a, a.lda, Y, ldy, bias);
  }

 private:
  // Rows zero-padded to whole blocks when K is not a multiple of the block (the kernels never
  // read past K), and for M = 1 the sum of each block of the row.
  PreparedRows prepare_rows(const float* A, int64_t M) const {
    const int64_t kb = w_.k_blocks, kp = kb * w_.block, K = w_.K;
    PreparedRows r{.a = A, .lda = K};
    Scratch& s = scratch();
    if (kp != K) {
      grow(s.pad, static_cast<size_t>(M * kp));
      for (int64_t m = 0; m < M; ++m) {
        std::memcpy(s.pad.data() + m * kp, A + m * K, sizeof(float) * K);
        std::memset(s.pad.data() + m * kp + K, 0, sizeof(float) * (kp - K));
      }
      r.a = s.pad.data();
      r.lda = kp;
    }
    if (M == 1) {
      grow(s.asum, static_cast<size_t>(kb));
      float* asum = s.asum.data();
      for (int64_t b = 0; b < kb; ++b) {
        float sum = 0.0f;
        for (int j = 0; j < w_.block; ++j) sum += r.a[b * w_.block + j];
        asum[b] = sum;
      }
      r.asum = asum;
    }
    return r;
  }

  Pack w_;
  PanelFp32Kernels<Pack> k_;
};

}  // namespace

template <class Pack>
std::unique_ptr<PackedMatMul> make_panel_int8(Pack w, const PanelInt8Kernels<Pack>& k) {
  return std::make_unique<PanelInt8<Pack>>(std::move(w), k);
}

template <class Pack>
std::unique_ptr<PackedMatMul> make_panel_fp32(Pack w, const PanelFp32Kernels<Pack>& k) {
  return std::make_unique<PanelFp32<Pack>>(std::move(w), k);
}

template std::unique_ptr<PackedMatMul> make_panel_int8(quant::PackedX16,
                                                       const PanelInt8Kernels<quant::PackedX16>&);
template std::unique_ptr<PackedMatMul> make_panel_int8(quant::PackedPanel16,
                                                       const PanelInt8Kernels<quant::PackedPanel16>&);
template std::unique_ptr<PackedMatMul> make_panel_fp32(quant::PackedX16,
                                                       const PanelFp32Kernels<quant::PackedX16>&);
template std::unique_ptr<PackedMatMul> make_panel_fp32(quant::PackedPanel16,
                                                       const PanelFp32Kernels<quant::PackedPanel16>&);

}  // namespace nbits::kernels
