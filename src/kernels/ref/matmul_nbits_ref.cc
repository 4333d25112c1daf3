// Plain scalar MatMulNBits, written to be read, not to be fast.
#include "kernels/ref/matmul_nbits_ref.h"

#include <cstring>

#include "quant/quantize_a.h"

namespace nbits::kernels {

void matmul_nbits_ref_fp32(const QuantizedMatrix& w, const float* A, int64_t M, float* Y,
                           const float* bias) {
  const int64_t kb = w.k_blocks();
  std::vector<float> wrow(static_cast<size_t>(w.K));
  for (int64_t n = 0; n < w.N; ++n) {
    for (int64_t b = 0; b < kb; ++b) {
      const float zp = w.zero_point(n, b), s = w.scale(n, b);
      for (int64_t k = b * w.block_size; k < std::min(w.K, (b + 1) * w.block_size); ++k)
        wrow[k] = (static_cast<float>(w.code(n, k)) - zp) * s;
    }
    for (int64_t m = 0; m < M; ++m) {
      const float* a = A + m * w.K;
      float acc = 0.0f;
      for (int64_t k = 0; k < w.K; ++k) acc += a[k] * wrow[k];
      Y[m * w.N + n] = acc + (bias != nullptr ? bias[n] : 0.0f);
    }
  }
}

int32_t block_dot_ref(const QuantizedMatrix& w, int64_t n, int64_t b, const int8_t* qa_block) {
  const int zp = static_cast<int>(w.zero_point(n, b));
  int32_t dot = 0;
  for (int64_t j = 0; j < w.block_size; ++j) {
    const int64_t k = b * w.block_size + j;
    if (k >= w.K) break;  // activation tail is zero; padded codes never count
    dot += static_cast<int32_t>(qa_block[j]) * (w.code(n, k) - zp);
  }
  return dot;
}

void matmul_nbits_ref_int8(const QuantizedMatrix& w, const float* A, int64_t M, float* Y,
                           const float* bias) {
  const int64_t kb = w.k_blocks();
  std::vector<int8_t> qa(static_cast<size_t>(kb * w.block_size));
  std::vector<float> sa(static_cast<size_t>(kb));
  for (int64_t m = 0; m < M; ++m) {
    quant::quantize_row_blocks(A + m * w.K, w.K, w.block_size, qa.data(), sa.data());
    for (int64_t n = 0; n < w.N; ++n) {
      float acc = 0.0f;
      for (int64_t b = 0; b < kb; ++b) {
        const int32_t dot = block_dot_ref(w, n, b, qa.data() + b * w.block_size);
        acc += static_cast<float>(dot) * (sa[b] * w.scale(n, b));
      }
      Y[m * w.N + n] = acc + (bias != nullptr ? bias[n] : 0.0f);
    }
  }
}

namespace {

// "Packing" for the reference = an owned copy of the ONNX layout, so the
// mapped file can be released.
class RefPacked final : public PackedMatMul {
 public:
  RefPacked(const QuantizedMatrix& w, Compute compute) : w_(w), compute_(compute) {
    const int64_t kb = w.k_blocks();
    codes_.assign(w.codes, w.codes + w.N * kb * w.blob_bytes());
    scales_.assign(w.scales, w.scales + w.N * kb);
    if (w.zero_points) zp_.assign(w.zero_points, w.zero_points + w.N * w.zp_row_bytes());
    if (w.zero_points_f) zpf_.assign(w.zero_points_f, w.zero_points_f + w.N * kb);
    w_.codes = codes_.data();
    w_.scales = scales_.data();
    w_.zero_points = w.zero_points ? zp_.data() : nullptr;
    w_.zero_points_f = w.zero_points_f ? zpf_.data() : nullptr;
  }

  void run(const float* A, int64_t M, float* Y, const float* bias, ThreadPool& pool) const override {
    // Split N across threads; each part is an independent reference call.
    pool.parallel_range(w_.N, 16, [&](int64_t n0, int64_t n1) {
      QuantizedMatrix part = w_;
      part.N = n1 - n0;
      part.codes = w_.codes + n0 * w_.k_blocks() * w_.blob_bytes();
      part.scales = w_.scales + n0 * w_.k_blocks();
      if (part.zero_points) part.zero_points = w_.zero_points + n0 * w_.zp_row_bytes();
      if (part.zero_points_f) part.zero_points_f = w_.zero_points_f + n0 * w_.k_blocks();
      std::vector<float> y(static_cast<size_t>(M * part.N));
      if (compute_ == Compute::kInt8)
        matmul_nbits_ref_int8(part, A, M, y.data(), bias ? bias + n0 : nullptr);
      else
        matmul_nbits_ref_fp32(part, A, M, y.data(), bias ? bias + n0 : nullptr);
      for (int64_t m = 0; m < M; ++m)
        std::memcpy(Y + m * w_.N + n0, y.data() + m * part.N, sizeof(float) * part.N);
    });
  }
  const char* kernel_name(int64_t) const override {
    return compute_ == Compute::kInt8 ? "matmul_nbits_int8_ref" : "matmul_nbits_fp32_ref";
  }
  size_t packed_bytes() const override {
    return codes_.size() + scales_.size() * 4 + zp_.size() + zpf_.size() * 4;
  }

 private:
  QuantizedMatrix w_;
  Compute compute_;
  std::vector<uint8_t> codes_;
  std::vector<float> scales_;
  std::vector<uint8_t> zp_;
  std::vector<float> zpf_;
};

}  // namespace

void register_ref_matmul_nbits(std::vector<MatMulNBitsKernel>& t) {
  t.push_back({"ref_int8", Compute::kInt8,
               [](const QuantizedMatrix& w, const CpuFeatures&) { return w.zero_points_f == nullptr; },
               [](const QuantizedMatrix& w) -> std::unique_ptr<PackedMatMul> {
                 return std::make_unique<RefPacked>(w, Compute::kInt8);
               }});
  t.push_back({"ref_fp32", Compute::kFp32, [](const QuantizedMatrix&, const CpuFeatures&) { return true; },
               [](const QuantizedMatrix& w) -> std::unique_ptr<PackedMatMul> {
                 return std::make_unique<RefPacked>(w, Compute::kFp32);
               }});
}

}  // namespace nbits::kernels
