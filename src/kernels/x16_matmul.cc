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

class X16Int8 final : public PackedMatMul {
 public:
  X16Int8(quant::PackedX16 w, const X16Int8Kernels& k) : w_(std::move(w)), k_(k) {}

  void run(const float* A, int64_t M, float* Y, const float* bias, ThreadPool& pool) const override {
    if (M <= 0) return;
    const int64_t kb = w_.k_blocks, kp = kb * w_.block;
    grow(qa_, static_cast<size_t>(M * kp));
    grow(sa_, static_cast<size_t>(M * kb));
    grow(qsum_, static_cast<size_t>(M * kb));
    auto quantize = [&](int64_t m) {
      k_.quantize(A + m * w_.K, w_.K, w_.block, qa_.data() + m * kp, sa_.data() + m * kb,
                  qsum_.data() + m * kb);
    };
    if (M == 1) {
      quantize(0);
      over_panels(w_, M, pool, [&](int64_t p0, int64_t p1) {
        k_.gemv(w_, p0, p1, qa_.data(), sa_.data(), qsum_.data(), Y, bias);
      });
      return;
    }
    pool.parallel_for(M, quantize);
    over_panels(w_, M, pool, [&](int64_t p0, int64_t p1) {
      k_.gemm(w_, p0, p1, M, qa_.data(), sa_.data(), qsum_.data(), Y, w_.N, bias);
    });
  }
  const char* kernel_name(int64_t M) const override { return M == 1 ? k_.gemv_name : k_.gemm_name; }
  size_t packed_bytes() const override { return w_.data.size(); }

 private:
  quant::PackedX16 w_;
  X16Int8Kernels k_;
  mutable std::vector<int8_t> qa_;
  mutable std::vector<float> sa_;
  mutable std::vector<int32_t> qsum_;
};

class X16Fp32 final : public PackedMatMul {
 public:
  X16Fp32(quant::PackedX16 w, const X16Fp32Kernels& k) : w_(std::move(w)), k_(k) {}

  void run(const float* A, int64_t M, float* Y, const float* bias, ThreadPool& pool) const override {
    if (M <= 0) return;
    const int64_t kb = w_.k_blocks, kp = kb * w_.block, K = w_.K;
    const float* a = A;
    int64_t lda = K;
    if (kp != K) {  // zero-pad rows to whole blocks so the kernels never read past K
      grow(pad_, static_cast<size_t>(M * kp));
      for (int64_t m = 0; m < M; ++m) {
        std::memcpy(pad_.data() + m * kp, A + m * K, sizeof(float) * K);
        std::memset(pad_.data() + m * kp + K, 0, sizeof(float) * (kp - K));
      }
      a = pad_.data();
      lda = kp;
    }
    if (M == 1) {
      grow(asum_, static_cast<size_t>(kb));
      for (int64_t b = 0; b < kb; ++b) {
        float s = 0.0f;
        for (int j = 0; j < w_.block; ++j) s += a[b * w_.block + j];
        asum_[b] = s;
      }
      over_panels(w_, M, pool,
                  [&](int64_t p0, int64_t p1) { k_.gemv(w_, p0, p1, a, asum_.data(), Y, bias); });
      return;
    }
    over_panels(w_, M, pool, [&](int64_t p0, int64_t p1) { k_.gemm(w_, p0, p1, M, a, lda, Y, w_.N, bias); });
  }
  const char* kernel_name(int64_t M) const override { return M == 1 ? k_.gemv_name : k_.gemm_name; }
  size_t packed_bytes() const override { return w_.data.size(); }

 private:
  quant::PackedX16 w_;
  X16Fp32Kernels k_;
  mutable std::vector<float> pad_;
  mutable std::vector<float> asum_;
};

}  // namespace

std::unique_ptr<PackedMatMul> make_x16_int8(const QuantizedMatrix& w, const X16Int8Kernels& k) {
  return std::make_unique<X16Int8>(quant::pack_x16(w), k);
}

std::unique_ptr<PackedMatMul> make_x16_fp32(const QuantizedMatrix& w, const X16Fp32Kernels& k) {
  return std::make_unique<X16Fp32>(quant::pack_x16(w), k);
}

std::unique_ptr<PackedMatMul> make_x16_int8(const QuantizedMatrix& w, const PackOptions& options,
                                            const X16Int8Kernels& k32, const X16Int8Kernels& k16) {
  quant::PackedX16 p = quant::pack_x16(w, options.fp16_scales);
  const X16Int8Kernels& k = p.scales_fp16 ? k16 : k32;
  return std::make_unique<X16Int8>(std::move(p), k);
}

std::unique_ptr<PackedMatMul> make_x16_fp32(const QuantizedMatrix& w, const PackOptions& options,
                                            const X16Fp32Kernels& k32, const X16Fp32Kernels& k16) {
  quant::PackedX16 p = quant::pack_x16(w, options.fp16_scales);
  const X16Fp32Kernels& k = p.scales_fp16 ? k16 : k32;
  return std::make_unique<X16Fp32>(std::move(p), k);
}

}  // namespace nbits::kernels
