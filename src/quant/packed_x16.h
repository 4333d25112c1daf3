// The x16 packed weight format: MatMulNBits weights re-laid out at load time in
// panels of 16 output columns, so a SIMD kernel streams one contiguous run of
// bytes per panel and gets one int32 (or fp32) lane per output column.
//
// Layout: panel p (columns 16p..16p+15) is `panel_stride` bytes; inside it, first (only with
// super-block scales) `super_bytes` of super-block headers, then K-block b is `block_stride` bytes:
//   [scales[16]]   float (64 bytes), or IEEE fp16 (32 bytes) when scales_fp16, or (super_blocks
//                  > 0) int8 multipliers (16 bytes) of the super-block's scale
//   [mins[16]]     float (64 bytes), only when has_mins (QuantizedMatrix::mins); int8 multipliers
//                  (16 bytes) with super-block scales
//   [uint8 zp[16]] kZpBytes bytes (16 zero points, then padding), only when has_zp
//   [codes]        groups of 64 bytes, one dword per column:
//     bits 4: a group covers 8 k; column c's dword (bytes 4c..4c+3): byte i holds
//             k = 8g+i in its low nibble and k = 8g+4+i in its high nibble;
//     bits 8: a group covers 4 k; byte i of column c's dword is the code of k = 4g+i.
//     bits 5 (int8 weights whose codes span at most 32 values, packed so when asked: GGUF
//             Q5_0 / Q5_1 / Q5_K at the file's size): the codes minus code_lo, their low 4 bits
//             as bits 4 (block / 8 groups), then block / 32 high-bit planes of 64 bytes: plane j
//             holds steps s = 8j..8j+7 (a step: k = 4s..4s+3); its byte 4c + i (columns 0..7) or
//             32 + 4(c - 8) + i (columns 8..15) has, in bit s - 8j, bit 4 of that column's code
//             at k = 4s + i. The zero points stay the unshifted ones (kernels take code_lo as the
//             offset of their dots).
//     bits 6 (codes spanning at most 64 values, blocks of 16k: GGUF Q6_K at the file's size): the
//             same with block / 16 planes of 4 steps each: plane j's byte (as above) has, in bits
//             2(s - 4j) and 2(s - 4j) + 1, bits 4 and 5 of the code at k = 4s + i.
//     lut4 (bits 4 with lut4 set: int8 weights with at most 16 distinct codes, packed so when
//             asked: GGUF MXFP4 / NVFP4's e2m1 levels, IQ4_NL / IQ4_XS's levels and the IQ1 / IQ2 /
//             IQ3 lattices' values at 4 bits): bits 4's layout of 4-bit indices, code =
//             lut[index]; the zero point and code_lo / code_hi are the 8-bit codes' (default_zp()
//             128).
// Super-block scales (GGUF's K-quants, packed so when asked and exact): every `super_blocks`
// consecutive blocks of a column (256 elements) share one fp16 scale D (and one fp16 min scale),
// and each block's scale is D times an int8 (min: Dmin times an int8), both products exact in
// fp32, so kernels that multiply them back get the reference's fp32 scales bit for bit. Header
// of super-block j of a panel, at panel + j * super_stride: D[16] fp16, then (has_mins) Dmin[16].
// Q4_K then streams 4.625 bits a weight (file: 4.5) instead of 6.
// Codes stay unsigned (0..15 / 0..255). Codes past K and columns past N are 0
// with scale 0 and zero point 0, so they never contribute (kernels also feed
// zero activations there). Without has_zp the zero point is default_zp():
// 2^(bits-1), or uniform_zp when the packer was asked to drop zero points that are
// all equal (pack_x16's fold_uniform_zp: Q4_1 / Q4_K have all 0).
// Blocks (hence codes) are only 16-byte aligned when has_zp: kernels use
// unaligned loads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <vector>

#include "base/huge_pages.h"
#include "base/thread_pool.h"
#include "kernels/matmul_nbits.h"

namespace nbits::quant {

// Frees AlignedBytes' memory (huge_page_free needs the size).
struct AlignedBytesFree {
  size_t bytes = 0;  // as allocated (n rounded up to 64)
  void operator()(uint8_t* p) const { huge_page_free(p, bytes); }
};

// 64-byte aligned owned bytes, zeroed. Weights: on 2 MiB pages where the OS gives them
// (base/huge_pages.h), since decode streams them every token.
class AlignedBytes {
 public:
  AlignedBytes() = default;
  explicit AlignedBytes(size_t n);
  // Not zeroed: the caller writes (or zeroes) every byte it reads. A packer that fills the
  // panels as it goes then makes each page resident only when it reaches it, so a weight's
  // packed copy grows while its source pages are given back (load peak = packed + a slice).
  static AlignedBytes uninitialized(size_t n);
  // Not zeroed, and from the heap rather than huge_page_alloc: a per-thread buffer that is
  // replaced as it grows (space inside huge_page_alloc's chunks is never reused).
  static AlignedBytes scratch(size_t n);
  uint8_t* data() { return p_.get(); }
  const uint8_t* data() const { return p_.get(); }
  size_t size() const { return n_; }

 private:
  std::unique_ptr<uint8_t[], AlignedBytesFree> p_;
  size_t n_ = 0;
};

struct PackedX16 {
  int bits = 4;
  int block = 32;
  int64_t N = 0, K = 0;
  int64_t k_blocks = 0;
  int64_t panels = 0;
  bool has_zp = false;
  bool scales_fp16 = false;  // scales stored as IEEE fp16 (else float)
  bool has_mins = false;     // per-block float mins stored (after the scales)
  int uniform_zp = -1;       // >= 0: every zero point is this (none stored, has_zp false)
  // The smallest and largest code of the weight's real elements (k < K, n < N; the zero padding
  // is not counted). GGUF's 5- and 6-bit types held as 8-bit codes span 32 or 64 values
  // (Q5_0: 112..143), which kernels can multiply unsigned after subtracting code_lo.
  int code_lo = 0, code_hi = 255;
  // lut4: the 4-bit codes index lut, the 8-bit codes they stand for (unused entries: code_lo).
  bool lut4 = false;
  uint8_t lut[16] = {};
  size_t mins_offset = 0;   // offset of the mins in a block (= bytes of scales)
  size_t zp_offset = 0;     // offset of the zero points in a block (scales + mins)
  size_t header_bytes = 0;  // scales (+ zero points)
  size_t block_stride = 0;  // header + codes of one (panel, K-block)
  size_t panel_stride = 0;  // super_bytes + k_blocks * block_stride
  int super_blocks = 0;     // > 0: super-block scales, this many blocks (a power of two) per super-block
  int super_shift = 0;      // log2(super_blocks)
  size_t super_stride = 0;  // bytes of one super-block header (32, or 64 with mins)
  size_t super_bytes = 0;   // super-block headers at the start of each panel
  AlignedBytes data;

  // The first block of panel p (after its super-block headers).
  const uint8_t* panel(int64_t p) const { return data.data() + p * panel_stride + super_bytes; }
  // The header of the super-block holding block b of panel p (super_blocks > 0).
  const uint8_t* super(int64_t p, int64_t b) const {
    return data.data() + p * panel_stride + (b >> super_shift) * super_stride;
  }
  // Elements of K covered by one 64-byte code group (8 for int4 and the low bits of int5 / int6, 4 for int8).
  int group_k() const { return bits == 8 ? 4 : 8; }
  // Offset of the high-bit planes of a block (bits 5 and 6), after its block / 8 nibble groups.
  size_t high_planes_offset() const { return header_bytes + static_cast<size_t>(block) * 8; }
  // The implicit zero point: 2^(bits-1) of the source's codes (int5 / int6 / lut4 come from int8: 128).
  int default_zp() const { return uniform_zp >= 0 ? uniform_zp : bits == 4 && !lut4 ? 8 : 128; }
  // A plain int4 / int8 format every set's tiles read (no super-block scales, int5 / int6 or lut4).
  bool plain() const { return super_blocks == 0 && !lut4 && (bits == 4 || bits == 8); }
  // A weight of this format with `n` full panels, panel i a copy of panel i % panels (timing a
  // kernel on a larger weight of the model's own panels: kernels/kernel_choice.h).
  PackedX16 with_panels(int64_t n) const;
  // Bits an unsigned code minus code_lo needs (code_hi - code_lo < 2^code_span_bits()).
  int code_span_bits() const {
    int b = 0;
    while ((code_hi - code_lo) >> b != 0) ++b;
    return b;
  }
};

// Bytes of the zero-point section of a block (16 zero points), one value for every
// translation unit (the format is fixed; no macro can change it per file).
constexpr size_t kZpBytes = 16;
static_assert(kZpBytes >= 16 && kZpBytes % 16 == 0, "zero points: 16 bytes, 16-byte aligned");

// True when `w` can be packed as x16 (bits 4 or 8, block a power of two >= 16,
// integer zero points).
bool x16_packable(const kernels::QuantizedMatrix& w);

// The smallest and largest code of `w`'s real elements (k < K).
struct CodeRange {
  int lo = 255, hi = 0;
  void add(int c) { lo = c < lo ? c : lo, hi = c > hi ? c : hi; }
};
CodeRange code_range(const kernels::QuantizedMatrix& w);

// The distinct codes of `w`'s real elements, ascending; empty when there are more than `most`.
std::vector<uint8_t> distinct_codes(const kernels::QuantizedMatrix& w, size_t most);

// True when every scale of `w` is 0 or a normal fp16 number in magnitude
// (2^-14 <= |s| <= 65504), so rounding it to fp16 costs at most 2^-11 relative.
bool scales_fit_fp16(const kernels::QuantizedMatrix& w);

// True when every scale of `w` is exactly an fp16 number of that range (GGUF Q4_0 / Q5_0 / Q8_0 /
// IQ4_NL, ONNX files with fp16 scales): fp16 storage then changes no result, only the bytes.
bool scales_exact_fp16(const kernels::QuantizedMatrix& w);

// Packs `w` (x16_packable) into a new PackedX16, with fp16 scales when asked
// and scales_fit_fp16(w) (else float scales: check the result's scales_fp16).
// rows_consumed (optional): called with n as rows [0, n) of the source are done.
// pool (optional): rows are packed in parallel, 256 at a time per task.
// w.mins (when set) are stored (has_mins). fold_uniform_zp: explicit zero points
// that are all equal are not stored (uniform_zp; for kernels reading default_zp()).
// int5: an int8 weight whose codes span at most 32 values, with blocks a multiple of 32, is
// packed as bits 5; int6: one whose codes span at most 64 values, with blocks a multiple of 16, as
// bits 6 (for kernels that read them; others leave them false); lut4: one with at most 16 distinct
// codes and no zero points to store as 4-bit indices into PackedX16::lut (ahead of int5).
// super: scales (and mins) that are exactly fp16 super-block scales times int8 (GGUF K-quants:
// find_super_scales) are packed so (super_blocks > 0; for kernels that read it), ahead of fp16.
PackedX16 pack_x16(const kernels::QuantizedMatrix& w, bool fp16_scales = false,
                   const std::function<void(int64_t)>& rows_consumed = {}, ThreadPool* pool = nullptr,
                   bool fold_uniform_zp = false, bool int5 = false, bool super = false, bool int6 = false,
                   bool lut4 = false);

// A weight's block scales (and mins) as super-block scales: for each column and each run of
// `blocks` consecutive blocks (256 elements), an fp16 D and int8 q with (float)q * D == the
// fp32 scale exactly. Empty (ok false) when some run has no such form (most ONNX files; decided
// on the first panel's columns first, so a miss costs little).
struct SuperScales {
  bool ok = false;
  int blocks = 0;               // blocks per super-block
  std::vector<int8_t> q, qm;    // [N * k_blocks] multipliers of the scales / mins
  std::vector<uint16_t> d, dm;  // [N * supers] fp16 D of the scales / mins
  int64_t supers = 0;           // super-blocks per column
};
SuperScales find_super_scales(const kernels::QuantizedMatrix& w, ThreadPool* pool = nullptr);

// The zero point that every block of `w` has, or -1 when they differ (or w has none).
int uniform_zero_point(const kernels::QuantizedMatrix& w);

}  // namespace nbits::quant
