#include "kernels/x16_matmul.h"

#include <cstring>
#include <utility>

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

// Splits the panels of `w` over the pool in chunks of at least kMinBytesPerTask
// of weights (scaled down by M, since each panel is then used M times): fn(p0, p1).
template <typename F>
void over_panels(const quant::PackedX16& w, int64_t M, ThreadPool& pool, F&& fn) {
  const int64_t panel_bytes =
      std::max<int64_t>(1, static_cast<int64_t>(w.data.size()) / std::max<int64_t>(1, w.panels));
  const int64_t min_panels = std::max<int64_t>(1, kMinBytesPerTask / (panel_bytes * std::max<int64_t>(1, M)));
  pool.parallel_range(w.panels, min_panels, [&](int64_t p0, int64_t p1) { fn(p0, p1); });
}

// Activation scratch shared by every matrix run from the calling thread. A step
// runs its matmuls one after another, so one buffer grown to the largest M x K
// serves them all, instead of one per matrix (about 40 MB for Qwen2.5-0.5B at
// M = 128). Pool workers only read and write it through the caller's run().
struct Scratch {
  std::vector<int8_t> qa;
  std::vector<float> sa;
  std::vector<int32_t> qsum;
  std::vector<float> pad, asum;
};

Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

class X16Int8 final : public PackedMatMul {
 public:
  X16Int8(quant::PackedX16 w, const X16Int8Kernels& k) : w_(std::move(w)), k_(k) {}

  void run(const float* A, int64_t M, float* Y, const float* bias, ThreadPool& pool) const override {
    if (M <= 0) return;
    const int64_t kb = w_.k_blocks, kp = kb * w_.block;
    Scratch& s = scratch();
    grow(s.qa, static_cast<size_t>(M * kp));
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
      over_panels(w_, M, pool, [&](int64_t p0, int64_t p1) { k_.gemv(w_, p0, p1, qa, sa, qsum, Y, bias); });
      return;
    }
    pool.parallel_for(M, quantize);
    over_panels(w_, M, pool,
                [&](int64_t p0, int64_t p1) { k_.gemm(w_, p0, p1, M, qa, sa, qsum, Y, w_.N, bias); });
  }
  const char* kernel_name(int64_t M) const override { return M == 1 ? k_.gemv_name : k_.gemm_name; }
  size_t packed_bytes() const override { return w_.data.size(); }

 private:
  quant::PackedX16 w_;
  X16Int8Kernels k_;
};

class X16Fp32 final : public PackedMatMul {
 public:
  X16Fp32(quant::PackedX16 w, const X16Fp32Kernels& k) : w_(std::move(w)), k_(k) {}

  void run(const float* A, int64_t M, float* Y, const float* bias, ThreadPool& pool) const override {
    if (M <= 0) return;
    const int64_t kb = w_.k_blocks, kp = kb * w_.block, K = w_.K;
    const float* a = A;
    int64_t lda = K;
    Scratch& s = scratch();
    if (kp != K) {  // zero-pad rows to whole blocks so the kernels never read past K
      grow(s.pad, static_cast<size_t>(M * kp));
      for (int64_t m = 0; m < M; ++m) {
        std::memcpy(s.pad.data() + m * kp, A + m * K, sizeof(float) * K);
        std::memset(s.pad.data() + m * kp + K, 0, sizeof(float) * (kp - K));
      }
      a = s.pad.data();
      lda = kp;
    }
    if (M == 1) {
      grow(s.asum, static_cast<size_t>(kb));
      float* asum = s.asum.data();
      for (int64_t b = 0; b < kb; ++b) {
        float sum = 0.0f;
        for (int j = 0; j < w_.block; ++j) sum += a[b * w_.block + j];
        asum[b] = sum;
      }
      over_panels(w_, M, pool, [&](int64_t p0, int64_t p1) { k_.gemv(w_, p0, p1, a, asum, Y, bias); });
      return;
    }
    over_panels(w_, M, pool, [&](int64_t p0, int64_t p1) { k_.gemm(w_, p0, p1, M, a, lda, Y, w_.N, bias); });
  }
  const char* kernel_name(int64_t M) const override { return M == 1 ? k_.gemv_name : k_.gemm_name; }
  size_t packed_bytes() const override { return w_.data.size(); }

 private:
  quant::PackedX16 w_;
  X16Fp32Kernels k_;
};

}  // namespace

std::unique_ptr<PackedMatMul> make_x16_int8(const QuantizedMatrix& w, const X16Int8Kernels& k) {
  return std::make_unique<X16Int8>(quant::pack_x16(w), k);
}

std::unique_ptr<PackedMatMul> make_x16_fp32(const QuantizedMatrix& w, const X16Fp32Kernels& k) {
  return std::make_unique<X16Fp32>(quant::pack_x16(w), k);
}

std::unique_ptr<PackedMatMul> make_x16_int8(const QuantizedMatrix& w, const PackOptions& options,
                                            const X16Int8Kernels& k32, const X16Int8Kernels& k16,
                                            bool fold_uniform_zp) {
  quant::PackedX16 p =
      quant::pack_x16(w, options.fp16_scales, options.rows_consumed, options.pool, fold_uniform_zp);
  const X16Int8Kernels& k = p.scales_fp16 ? k16 : k32;
  return std::make_unique<X16Int8>(std::move(p), k);
}

std::unique_ptr<PackedMatMul> make_x16_fp32(const QuantizedMatrix& w, const PackOptions& options,
                                            const X16Fp32Kernels& k32, const X16Fp32Kernels& k16) {
  quant::PackedX16 p = quant::pack_x16(w, options.fp16_scales, options.rows_consumed, options.pool);
  const X16Fp32Kernels& k = p.scales_fp16 ? k16 : k32;
  return std::make_unique<X16Fp32>(std::move(p), k);
}

}  // namespace nbits::kernels
