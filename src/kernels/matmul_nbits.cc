// QuantizedMatrix accessors and the single MatMulNBits dispatch point.
#include "kernels/matmul_nbits.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string_view>
#include <utility>
#include <vector>

#include "base/error.h"
#include "kernels/kernel_choice.h"
#include "kernels/ref/matmul_nbits_ref.h"
#include "quant/quantize_a.h"

#if defined(NBITS_ARCH_X86)
#include "kernels/x86/register_x86.h"
#endif
#if defined(NBITS_ARCH_RISCV)
#include "kernels/rvv/register_rvv.h"
#endif
#if defined(NBITS_ARCH_ARM64)
#include "kernels/arm64/register_arm64.h"
#endif

namespace nbits::kernels {

namespace {
std::atomic<bool> file_size_fast{false};
}  // namespace

void set_file_size_formats_fast(bool fast) { file_size_fast.store(fast); }

void PackOptions::file_size_formats(int threads) {
  (void)matmul_nbits_kernels();  // the architecture registers with its table
  const bool on = threads >= 2 || (file_size_fast.load() && kernel_choice_on());
  super_scales = auto_format("NBITS_SUPER_SCALES", on);
  int6 = auto_format("NBITS_INT6", on);
}

bool PackOptions::auto_format(const char* name, bool otherwise) {
  const char* e = std::getenv(name);
  if (e != nullptr && std::string_view(e) == "1") return true;
  if (e != nullptr && std::string_view(e) == "0") return false;
  return otherwise;
}

int QuantizedMatrix::code(int64_t n, int64_t k) const {
  const int64_t b = k / block_size, j = k % block_size;
  const uint8_t* blob = codes + (n * k_blocks() + b) * blob_bytes();
  switch (bits) {
    case 8:
      return blob[j];
    case 4:
      return (blob[j / 2] >> ((j & 1) * 4)) & 0xf;
    case 2:
      return (blob[j / 4] >> ((j & 3) * 2)) & 0x3;
    default:
      NBITS_ASSERT(false);
  }
}

float QuantizedMatrix::zero_point(int64_t n, int64_t b) const {
  if (zero_points_f != nullptr) return zero_points_f[n * k_blocks() + b];
  if (zero_points == nullptr) return static_cast<float>(1 << (bits - 1));
  const uint8_t* row = zero_points + n * zp_row_bytes();
  switch (bits) {
    case 8:
      return row[b];
    case 4:
      return static_cast<float>((row[b / 2] >> ((b & 1) * 4)) & 0xf);
    case 2:
      return static_cast<float>((row[b / 4] >> ((b & 3) * 2)) & 0x3);
    default:
      NBITS_ASSERT(false);
  }
}

#if !defined(NBITS_ARCH_X86)
std::string kernel_sets_left_out() { return ""; }  // x86: register_x86.cc
#endif

std::span<const MatMulNBitsKernel> matmul_nbits_kernels() {
  static const std::vector<MatMulNBitsKernel> table = [] {
    std::vector<MatMulNBitsKernel> t;
#if defined(NBITS_ARCH_X86)
    register_x86_matmul_nbits(t);
#endif
#if defined(NBITS_ARCH_RISCV)
    register_rvv_matmul_nbits(t);
#endif
#if defined(NBITS_ARCH_ARM64)
    register_arm64_matmul_nbits(t);
#endif
    register_ref_matmul_nbits(t);
    return t;
  }();
  return table;
}

namespace {

// A kernel set without MatMulNBitsKernel::mins, plus the min term in a second pass:
// Y[m, n] += sum_b mins[n, b] * s[m, b], with s the block sums of the activations the
// set multiplies (kInt8: scale_a * isum of quantize_row_blocks; kFp32: sums of A).
// Each y's sum runs over b in order; the loop over contiguous n inside it vectorizes.
class MinTermAfter final : public PackedMatMul {
 public:
  MinTermAfter(std::unique_ptr<PackedMatMul> inner, const QuantizedMatrix& w, Compute compute)
      : inner_(std::move(inner)), int8_(compute == Compute::kInt8), K_(w.K), N_(w.N), bs_(w.block_size) {
    const int64_t kb = w.k_blocks();
    mins_t_.resize(static_cast<size_t>(w.N * kb));  // [kb][N]: contiguous n
    for (int64_t n = 0; n < w.N; ++n)
      for (int64_t b = 0; b < kb; ++b) mins_t_[static_cast<size_t>(b * w.N + n)] = w.mins[n * kb + b];
  }

  void run(const float* A, int64_t M, float* Y, const float* bias, ThreadPool& pool) const override {
    inner_->run(A, M, Y, bias, pool);
    if (M <= 0) return;
    const int64_t K = K_, N = N_, bs = bs_, kb = (K + bs - 1) / bs;
    // Scratch of the calling thread (the workers below only read block_sums).
    thread_local std::vector<float> block_sums;
    thread_local std::vector<int8_t> qa;
    thread_local std::vector<float> qa_scales;
    if (block_sums.size() < static_cast<size_t>(M * kb)) block_sums.resize(static_cast<size_t>(M * kb));
    if (int8_) {
      if (qa.size() < static_cast<size_t>(kb * bs)) qa.resize(static_cast<size_t>(kb * bs));
      if (qa_scales.size() < static_cast<size_t>(kb)) qa_scales.resize(static_cast<size_t>(kb));
      for (int64_t m = 0; m < M; ++m)
        quant::quantize_row_blocks(A + m * K, K, static_cast<int>(bs), qa.data(), qa_scales.data(),
                                   block_sums.data() + m * kb);
    }
    for (int64_t m = 0; m < M && !int8_; ++m)
      for (int64_t b = 0; b < kb; ++b) {
        float s = 0;
        for (int64_t k = b * bs; k < std::min(K, (b + 1) * bs); ++k) s += A[m * K + k];
        block_sums[static_cast<size_t>(m * kb + b)] = s;
      }
    // The workers read the caller's sums (a thread_local named in the lambda would be theirs).
    const float* all_sums = block_sums.data();
    const float* mins_t = mins_t_.data();
    pool.parallel_range(N, 64, [&](int64_t n0, int64_t n1) {
      constexpr int64_t kStrip = 256;  // a strip of accumulators on the stack
      float acc[kStrip];
      for (int64_t m = 0; m < M; ++m) {
        const float* sums = all_sums + m * kb;
        for (int64_t s0 = n0; s0 < n1; s0 += kStrip) {
          const int64_t w = std::min(kStrip, n1 - s0);
          std::fill(acc, acc + w, 0.0f);
          for (int64_t b = 0; b < kb; ++b) {
            const float sb = sums[b];
            const float* mt = mins_t + b * N + s0;
            for (int64_t j = 0; j < w; ++j) acc[j] += mt[j] * sb;
          }
          float* y = Y + m * N + s0;
          for (int64_t j = 0; j < w; ++j) y[j] += acc[j];
        }
      }
    });
  }
  const char* kernel_name(int64_t M) const override { return inner_->kernel_name(M); }
  size_t packed_bytes() const override { return inner_->packed_bytes() + mins_t_.size() * sizeof(float); }

 private:
  std::unique_ptr<PackedMatMul> inner_;
  bool int8_;
  int64_t K_, N_, bs_;
  std::vector<float> mins_t_;
};

}  // namespace

std::unique_ptr<PackedMatMul> pack_kernel(const MatMulNBitsKernel& k, const QuantizedMatrix& w,
                                          const PackOptions& options) {
  if (w.mins == nullptr || k.mins) return k.pack_opts(w, options);
  QuantizedMatrix plain = w;
  plain.mins = nullptr;
  return std::make_unique<MinTermAfter>(k.pack_opts(plain, options), w, k.compute);
}

std::unique_ptr<PackedMatMul> make_matmul_nbits(const QuantizedMatrix& w, Compute compute,
                                                const CpuFeatures& cpu) {
  return make_matmul_nbits(w, compute, PackOptions{}, cpu);
}

std::unique_ptr<PackedMatMul> make_matmul_nbits(const QuantizedMatrix& w, Compute compute,
                                                const PackOptions& options, const CpuFeatures& cpu) {
  NBITS_CHECK(w.bits == 2 || w.bits == 4 || w.bits == 8, "MatMulNBits: bits=", w.bits,
              " is not supported (2, 4 or 8)");
  NBITS_CHECK(w.block_size >= 16 && (w.block_size & (w.block_size - 1)) == 0,
              "MatMulNBits: block_size=", w.block_size, " must be a power of two >= 16");
  PackOptions chosen = options;
  chosen.kernel_choice = kernel_choice_on();
  for (const auto& k : matmul_nbits_kernels())
    if (k.compute == compute && k.supports(w, cpu)) return pack_kernel(k, w, chosen);
  // No int8 kernel for this weight (e.g. float zero points): ORT computes in fp32 then too.
  if (compute == Compute::kInt8) return make_matmul_nbits(w, Compute::kFp32, options, cpu);
  fail("MatMulNBits: no kernel for bits=", w.bits, " block_size=", w.block_size);
}

bool lut4_panels_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("NBITS_LUT4");
    return e == nullptr || std::string_view(e) != "0";
  }();
  return on;
}

}  // namespace nbits::kernels
