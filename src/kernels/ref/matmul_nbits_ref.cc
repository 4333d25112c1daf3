// Plain scalar MatMulNBits, written to be read, not to be fast.
#include "kernels/ref/matmul_nbits_ref.h"

#include "quant/quantize_a.h"

namespace nbits::kernels {

// Columns [n0, n1) of Y (row stride w.N) in CompFp32: W dequantized on the fly.
static void ref_fp32_columns(const QuantizedMatrix& w, const float* A, int64_t M, float* Y, const float* bias,
                             int64_t n0, int64_t n1) {
  for (int64_t n = n0; n < n1; ++n) {
    for (int64_t m = 0; m < M; ++m) {
      const float* a = A + m * w.K;
      float acc = 0.0f;
      for (int64_t k = 0; k < w.K; ++k) {
        const int64_t b = k / w.block_size;
        acc += a[k] *
               ((static_cast<float>(w.code(n, k)) - w.zero_point(n, b)) * w.scale(n, b) + w.block_min(n, b));
      }
      Y[m * w.N + n] = acc + (bias != nullptr ? bias[n] : 0.0f);
    }
  }
}

// Columns [n0, n1) of Y in CompInt8, from rows of A already quantized
// (qa: [M][k_blocks*block_size], sa: [M][k_blocks]). Mins: right after each
// block's term, min * (sa * isum) with isum the block's integer activation sum.
static void ref_int8_columns(const QuantizedMatrix& w, const int8_t* qa, const float* sa, int64_t M, float* Y,
                             const float* bias, int64_t n0, int64_t n1) {
  const int64_t kb = w.k_blocks();
  for (int64_t m = 0; m < M; ++m) {
    const int8_t* qrow = qa + m * kb * w.block_size;
    for (int64_t n = n0; n < n1; ++n) {
      float acc = 0.0f;
      for (int64_t b = 0; b < kb; ++b) {
        const int32_t dot = block_dot_ref(w, n, b, qrow + b * w.block_size);
        acc += static_cast<float>(dot) * (sa[m * kb + b] * w.scale(n, b));
        if (w.mins != nullptr) {
          int32_t isum = 0;
          for (int64_t j = 0; j < w.block_size; ++j) isum += qrow[b * w.block_size + j];
          acc += w.block_min(n, b) * (sa[m * kb + b] * static_cast<float>(isum));
        }
      }
      Y[m * w.N + n] = acc + (bias != nullptr ? bias[n] : 0.0f);
    }
  }
}

void matmul_nbits_ref_fp32(const QuantizedMatrix& w, const float* A, int64_t M, float* Y, const float* bias) {
  ref_fp32_columns(w, A, M, Y, bias, 0, w.N);
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

// Quantizes every row of A per weight block (the CompInt8 contract).
static void quantize_rows(const QuantizedMatrix& w, const float* A, int64_t M, int8_t* qa, float* sa) {
  const int64_t kb = w.k_blocks();
  for (int64_t m = 0; m < M; ++m)
    quant::quantize_row_blocks(A + m * w.K, w.K, w.block_size, qa + m * kb * w.block_size, sa + m * kb);
}

void matmul_nbits_ref_int8(const QuantizedMatrix& w, const float* A, int64_t M, float* Y, const float* bias) {
  const int64_t kb = w.k_blocks();
  std::vector<int8_t> qa(static_cast<size_t>(M * kb * w.block_size));
  std::vector<float> sa(static_cast<size_t>(M * kb));
  quantize_rows(w, A, M, qa.data(), sa.data());
  ref_int8_columns(w, qa.data(), sa.data(), M, Y, bias, 0, w.N);
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
    if (w.mins) mins_.assign(w.mins, w.mins + w.N * kb);
    w_.codes = codes_.data();
    w_.scales = scales_.data();
    w_.zero_points = w.zero_points ? zp_.data() : nullptr;
    w_.zero_points_f = w.zero_points_f ? zpf_.data() : nullptr;
    w_.mins = w.mins ? mins_.data() : nullptr;
  }

  // Scratch for quantized activations grows with the largest M seen, so a
  // steady-state call allocates nothing. One instance runs one call at a time.
  void run(const float* A, int64_t M, float* Y, const float* bias, ThreadPool& pool) const override {
    if (compute_ == Compute::kInt8) {
      const int64_t kb = w_.k_blocks();
      // Scratch of the calling thread: one instance may run in several sessions at once.
      thread_local std::vector<int8_t> qa;
      thread_local std::vector<float> sa;
      // Each grown on its own: one thread runs matrices of different block sizes.
      if (qa.size() < static_cast<size_t>(M * kb * w_.block_size))
        qa.resize(static_cast<size_t>(M * kb * w_.block_size));
      if (sa.size() < static_cast<size_t>(M * kb)) sa.resize(static_cast<size_t>(M * kb));
      // The workers read the caller's buffers (a thread_local named in the lambda would be theirs).
      const int8_t* q = qa.data();
      const float* qs = sa.data();
      quantize_rows(w_, A, M, qa.data(), sa.data());
      pool.parallel_range(w_.N, 16,
                          [&](int64_t n0, int64_t n1) { ref_int8_columns(w_, q, qs, M, Y, bias, n0, n1); });
    } else {
      pool.parallel_range(w_.N, 16,
                          [&](int64_t n0, int64_t n1) { ref_fp32_columns(w_, A, M, Y, bias, n0, n1); });
    }
  }
  const char* kernel_name(int64_t) const override {
    return compute_ == Compute::kInt8 ? "matmul_nbits_int8_ref" : "matmul_nbits_fp32_ref";
  }
  size_t packed_bytes() const override {
    return codes_.size() + scales_.size() * 4 + zp_.size() + zpf_.size() * 4 + mins_.size() * 4;
  }

 private:
  QuantizedMatrix w_;
  Compute compute_;
  std::vector<uint8_t> codes_;
  std::vector<float> scales_;
  std::vector<uint8_t> zp_;
  std::vector<float> zpf_;
  std::vector<float> mins_;
};

}  // namespace

void register_ref_matmul_nbits(std::vector<MatMulNBitsKernel>& t) {
  t.push_back({"ref_int8", Compute::kInt8,
               [](const QuantizedMatrix& w, const CpuFeatures&) { return w.zero_points_f == nullptr; },
               [](const QuantizedMatrix& w) -> std::unique_ptr<PackedMatMul> {
                 return std::make_unique<RefPacked>(w, Compute::kInt8);
               },
               nullptr, /*mins=*/true});
  t.push_back({"ref_fp32", Compute::kFp32, [](const QuantizedMatrix&, const CpuFeatures&) { return true; },
               [](const QuantizedMatrix& w) -> std::unique_ptr<PackedMatMul> {
                 return std::make_unique<RefPacked>(w, Compute::kFp32);
               },
               nullptr, /*mins=*/true});
}

}  // namespace nbits::kernels
