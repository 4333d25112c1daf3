// MatMulNBits kernels: the seam between ops/ (which knows ONNX) and kernels/
// (which knows ISAs). A kernel set packs a quantized weight ONCE into its own
// format and then multiplies fp32 activations by it.
//
// Numerics contract (docs/design.md, matches ONNX Runtime):
//  * Compute::kFp32 (accuracy_level 0..3): W = (q - zp) * scale in fp32, fp32 FMA.
//  * Compute::kInt8 (accuracy_level 4): each row of A is quantized per weight
//    block with quant::quantize_row_blocks (scale = amax/127, round half to even,
//    tail beyond K zero); block dots are exact int32; zero points handled exactly
//    (either q - zp before the dot, or by per-block sums); blocks accumulate in
//    fp32 as acc += (float)dot * (scale_a * scale_b). Bias is added last.
//  * Block mins (QuantizedMatrix::mins, GGUF Q4_1/Q4_K/Q5_K: W = (q - zp) * scale + min):
//    kFp32: acc += a * ((q - zp) * scale + min) per element (the reference; kernel
//    sets add min * sum(a in block) instead, within a bound); kInt8: right after
//    block b's term, acc += min * (scale_a * (float)isum), isum = the exact integer
//    sum of the block's int8 activations, so the result is dequant(W) . quantized(A)
//    (llama.cpp's Q4_1 x Q8_1). Sets with MatMulNBitsKernel::mins fold it into
//    their blocks (x16 int8 sets: bit for bit the reference); for the others
//    make_matmul_nbits adds it in a second pass (same terms, another order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "base/cpu_features.h"
#include "base/thread_pool.h"

namespace nbits::kernels {

enum class Compute { kFp32, kInt8 };

// The weight exactly as MatMulNBits stores it (views; not owned).
struct QuantizedMatrix {
  int64_t N = 0;                         // output features (rows of B)
  int64_t K = 0;                         // input features
  int bits = 4;                          // 4 or 8 (2 handled by the reference only)
  int block_size = 32;                   // power of two >= 16
  const uint8_t* codes = nullptr;        // [N][k_blocks][block_size*bits/8], low nibble first
  const float* scales = nullptr;         // [N * k_blocks]
  const uint8_t* zero_points = nullptr;  // packed like ONNX, [N][ceil(k_blocks*bits/8)]; null = 2^(bits-1)
  const float* zero_points_f = nullptr;  // unpacked float zero points [N*k_blocks] (rare); null if absent
  const float* mins = nullptr;           // per-block additive mins [N*k_blocks] (GGUF); null = none

  int64_t k_blocks() const { return (K + block_size - 1) / block_size; }
  int64_t blob_bytes() const { return static_cast<int64_t>(block_size) * bits / 8; }
  int64_t zp_row_bytes() const { return (k_blocks() * bits + 7) / 8; }
  // Code of element (n, k) and the zero point of block (n, b), as unsigned ints.
  int code(int64_t n, int64_t k) const;
  float zero_point(int64_t n, int64_t b) const;
  float scale(int64_t n, int64_t b) const { return scales[n * k_blocks() + b]; }
  float block_min(int64_t n, int64_t b) const { return mins != nullptr ? mins[n * k_blocks() + b] : 0.0f; }
};

// A weight packed for one kernel set. The packed weights are immutable; run()
// keeps its scratch per calling thread (grown to the largest M seen) and splits
// its own work over the pool, so one instance may be run by several callers at
// once (sessions forked from one load).
class PackedMatMul {
 public:
  virtual ~PackedMatMul() = default;
  // Y[M,N] = A[M,K] * W^T (+ bias[N]). A and Y are dense row-major.
  // Uses `pool` to split N (panel-aligned). Allocates nothing after the first
  // call with a given M on a thread (scratch is kept per thread).
  virtual void run(const float* A, int64_t M, float* Y, const float* bias, ThreadPool& pool) const = 0;
  // The micro-kernel that a call with this M takes, e.g. "qgemv_q4x16_avx512vnni"
  // ("q4x16h...": the x16 format with fp16 scales).
  virtual const char* kernel_name(int64_t M) const = 0;
  // Bytes of packed weights (what a decode step streams).
  virtual size_t packed_bytes() const = 0;
};

// Load-time choices that change a kernel set's packed format.
struct PackOptions {
  // Store scales as IEEE fp16 (rounded to nearest even): ~2^-11 relative error per
  // scale, ~10% fewer bytes per token for int4 block 32. Only kernel sets with a
  // `pack_with` honour it (their kernel names then carry an "h", e.g.
  // qgemv_q4x16h_avx2); a matrix whose scales do not fit fp16 (|s| > 65504 or
  // subnormal) keeps fp32 scales.
  bool fp16_scales = false;
  // Where every scale is exactly an fp16 number (GGUF Q4_0/Q5_0/Q8_0 d, ONNX fp16 scales) those
  // sets store them as fp16 even without fp16_scales: the kernels widen fp16 exactly, so the
  // results are bit-identical, in 2 bytes instead of 4. false keeps fp32 (tests compare the two).
  bool exact_fp16_scales = true;
  // When set, packing calls it with n as it finishes source rows: rows [0, n) of
  // codes, scales and zero points are not read again, so the caller may drop their
  // file pages (peak memory at load = packed + a slice, not packed + original).
  // Kernel sets without `pack_with` never call it.
  std::function<void(int64_t n)> rows_consumed;
  // Packing splits the rows over this pool when set (load time on many-core boards).
  ThreadPool* pool = nullptr;
  // Formats at about a GGUF file's size, for the sets that read them (AVX2 int8): scales (and mins)
  // that are exactly an fp16 super-block scale times int8 (K-quants) stored so (Q4_K 6 -> 4.625
  // bits a weight), and int8 codes spanning at most 64 values in blocks of 16k as int6 (Q6_K
  // 8 -> 6 bits). Results are the same bits; they read fewer bytes but cost more arithmetic a
  // weight (on an AMD Zen3 with 4 KiB pages, 1-thread decode was 1.11x slower with them; with
  // 2 MiB pages and the streaming GEMVs 0.79-0.87x the time: docs/PERFORMANCE.md). Off here; the
  // loaders turn them on with file_size_formats().
  bool super_scales = false;
  bool int6 = false;
  // Where other kernel sets' micro-kernels can run the packed weight too (bit-exact), time them
  // and use the fastest per role (kernels/kernel_choice.h). make_matmul_nbits, the dispatch
  // point, turns it on unless NBITS_ISA or NBITS_KERNEL_CHOICE=off asks for the table's order; a
  // set packed directly (tests of one set) keeps its own micro-kernels and format.
  bool kernel_choice = false;

  // The choice for these formats: environment variable `name` "1" or "0" when set, else
  // `otherwise` (the loaders: on when the session runs 2 threads or more).
  static bool auto_format(const char* name, bool otherwise);
  // super_scales and int6 for a session of `threads` threads, each by auto_format
  // (NBITS_SUPER_SCALES, NBITS_INT6): on with 2 threads or more (decode is bandwidth-bound), and on
  // one thread too where the kernel choice is on and the architecture has GEMVs that read them at
  // memory speed (set_file_size_formats_fast).
  void file_size_formats(int threads);
};

// Registration (an architecture's register_*_matmul_nbits): with the kernel choice on, its CompInt8
// GEMVs read the formats at a GGUF file's size (PackOptions::super_scales, int6) about as fast as
// the plain ones on one thread (x86: the AVX2 qgemv_q4x16k_avx2 / q6x16k and the VNNI qgemv_q4x16k_*,
// qgemv_q56x16_1p_*).
void set_file_size_formats_fast(bool fast);

// One entry of the kernel table. Tests iterate the table; dispatch picks the
// first entry (in table order = preference) whose requirements hold.
struct MatMulNBitsKernel {
  const char* name;  // kernel set name, e.g. "q4x16_avx512vnni"
  Compute compute;
  // Requirements: CPU features and weight shape (bits, block size, ...).
  bool (*supports)(const QuantizedMatrix& w, const CpuFeatures& cpu);
  std::unique_ptr<PackedMatMul> (*pack)(const QuantizedMatrix& w);
  // Packs honouring `options`; null when the set has one format (it then ignores them).
  std::unique_ptr<PackedMatMul> (*pack_with)(const QuantizedMatrix& w, const PackOptions& options) = nullptr;
  // True when the set applies QuantizedMatrix::mins itself (in the contract's order);
  // otherwise make_matmul_nbits packs the weight without them and adds the min term after.
  bool mins = false;

  // pack_with when present, else pack.
  std::unique_ptr<PackedMatMul> pack_opts(const QuantizedMatrix& w, const PackOptions& options) const {
    return pack_with != nullptr ? pack_with(w, options) : pack(w);
  }
};

// The table, most preferred first; the scalar reference entries come last and
// support everything.
std::span<const MatMulNBitsKernel> matmul_nbits_kernels();

// The kernel sets this build left out (CMake NBITS_X86_KERNELS=host: those the build machine's CPU
// lacks), e.g. "avxvnni amx"; "" when it has every set of its architecture.
std::string kernel_sets_left_out();

// Packs `w` for kernel set `k` (k.pack_opts), adding the min term after the set's
// product when `w` has mins and the set does not apply them (MatMulNBitsKernel::mins).
// Whether the kernel sets that read lut4 panels (4-bit indices into a weight's table of at most 16
// 8-bit codes: GGUF MXFP4 / NVFP4, IQ4_NL / IQ4_XS and the IQ lattices; x16 on x86 and arm64, n16
// and t16 on RISC-V) pack them: yes unless NBITS_LUT4=0 (then their 8-bit codes).
bool lut4_panels_enabled();

std::unique_ptr<PackedMatMul> pack_kernel(const MatMulNBitsKernel& k, const QuantizedMatrix& w,
                                          const PackOptions& options = {});

// The single dispatch point: packs `w` for the best kernel set on `cpu`.
std::unique_ptr<PackedMatMul> make_matmul_nbits(const QuantizedMatrix& w, Compute compute,
                                                const CpuFeatures& cpu = cpu_features());
// The same, with packing options (see PackOptions).
std::unique_ptr<PackedMatMul> make_matmul_nbits(const QuantizedMatrix& w, Compute compute,
                                                const PackOptions& options,
                                                const CpuFeatures& cpu = cpu_features());

}  // namespace nbits::kernels
