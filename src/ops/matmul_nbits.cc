// com.microsoft MatMulNBits: Y = A x dequant(B)^T (+ bias). The weight is
// validated and packed once at load through kernels::make_matmul_nbits.
// Internal input 6 (GGUF Q4_1/Q4_K/Q5_K weights, value = q*d + m): per-block
// float mins [N * k_blocks], handed to the kernels as QuantizedMatrix::mins (see
// kernels/matmul_nbits.h for their numerics): in CompInt8 the min term uses the
// block sums of the int8 activations the kernel multiplies, so the result is
// dequant(W) . quantized(a), as llama.cpp's Q4_1 x Q8_1 dot. Measured on the
// SmolLM2 Q4_1 GGUF, fp32 sums with int8 main terms double the logit error
// (the uncentred codes' quantization error is no longer cancelled by the min).
#include "kernels/matmul_nbits.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>

#include "base/mapped_file.h"
#include "kernels/matmul_group.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace nbits::ops {
namespace {

// Rows of a typical prefill step, for the kernel name a report gives (AMX takes whole 16s).
constexpr int64_t kPrefillRows = 128;

using graph::OpArgs;
using graph::RunContext;

class MatMulNBitsOp final : public Op {
 public:
  MatMulNBitsOp(std::string where, std::unique_ptr<kernels::PackedMatMul> packed, std::vector<float> bias,
                graph::MatMulNBitsInfo info, std::vector<int32_t> perm)
      : where_(std::move(where)),
        packed_(std::move(packed)),
        bias_(std::move(bias)),
        info_(std::move(info)),
        perm_(std::move(perm)) {}

  void infer(const OpArgs& a) const override {
    const Shape& s = a.in[0]->shape;
    NBITS_CHECK(s.rank >= 1 && s[s.rank - 1] == info_.K, where_, ": input A ", s.str(),
                " must end in K=", info_.K);
    Shape y = s;
    y[y.rank - 1] = info_.N;
    if (a.last_position && y.rank >= 2) y[y.rank - 2] = 1;
    a.out[0]->shape = y;
  }

  void run(const OpArgs& a, RunContext& ctx) const override {
    const Shape& s = a.in[0]->shape;
    const float* A = a.in[0]->as<const float>();
    float* Y = a.out[0]->as<float>();
    const float* bias = bias_.empty() ? nullptr : bias_.data();
    const int64_t rows = a.in[0]->numel() / info_.K;
    if (!perm_.empty()) A = permuted(A, rows);
    // One position per sequence (a batched decode step): every row is a last row, one pass.
    if (a.last_position && s.rank >= 2 && s[s.rank - 2] != 1) {
      const int64_t S = s[s.rank - 2], batch = S ? rows / S : 0;
      for (int64_t b = 0; b < batch; ++b) {
        const float* row = A + ((b + 1) * S - 1) * info_.K;
        packed_->run(row, 1, Y + b * info_.N, bias, ctx.pool);
      }
      return;
    }
    if (rows > 0) packed_->run(A, rows, Y, bias, ctx.pool);
  }

  bool last_position_only() const override { return true; }
  const char* kernel_name(const OpArgs& a) const override {
    const Shape& s = a.in[0]->shape;
    const int64_t rows = a.in[0]->numel() / info_.K;
    return packed_->kernel_name(a.last_position && s.rank >= 2 ? 1 : rows);
  }
  std::vector<graph::MatMulNBitsInfo> nbits_info() const override {
    graph::MatMulNBitsInfo i = info_;
    i.kernel = packed_->kernel_name(1);
    i.prefill_kernel = packed_->kernel_name(kPrefillRows);
    return {i};
  }
  size_t packed_weight_bytes() const override {
    return packed_->packed_bytes() + bias_.size() * sizeof(float);
  }
  // B, scales, zero points and bias were packed or copied at load; only A is read.
  bool reads_constant_at_run(size_t input) const override { return input == 0; }

  // What a group node (MatMulNBitsGroupOp) takes over: the packed weight, bias and report.
  struct Parts {
    std::unique_ptr<kernels::PackedMatMul> packed;
    std::vector<float> bias;
    graph::MatMulNBitsInfo info;
  };
  Parts release() && { return {std::move(packed_), std::move(bias_), std::move(info_)}; }

 private:
  // g_idx: A's columns in the order the codes were permuted to at load (A'[m, j] = A[m, perm[j]]).
  const float* permuted(const float* A, int64_t rows) const {
    const int64_t K = info_.K;
    thread_local std::vector<float> a_perm;  // scratch of the calling thread
    if (a_perm.size() < static_cast<size_t>(rows * K)) a_perm.resize(static_cast<size_t>(rows * K));
    for (int64_t m = 0; m < rows; ++m)
      for (int64_t j = 0; j < K; ++j) a_perm[static_cast<size_t>(m * K + j)] = A[m * K + perm_[j]];
    return a_perm.data();
  }

  std::string where_;
  std::unique_ptr<kernels::PackedMatMul> packed_;
  std::vector<float> bias_;
  graph::MatMulNBitsInfo info_;
  std::vector<int32_t> perm_;  // g_idx: column order of the packed codes; empty = K order
};

}  // namespace

namespace {

// How the pages of w's rows may go once they are packed.
using ReleasePages = std::function<void(const void* p, size_t n)>;

// Packs w (+ bias) for the kernels and builds the op. release (when set) is called on the
// codes, scales and zero points of the rows packed so far: b.release_pages where they view the
// mapped file, release_anonymous_pages where they are this load's own buffers.
std::unique_ptr<Op> pack_matmul(OpBuild& b, const kernels::QuantizedMatrix& w, std::vector<float> bias,
                                int default_level, const ReleasePages& release, std::vector<float> mins = {},
                                std::vector<int32_t> perm = {}) {
  const onnx::Node& n = b.node;
  const int64_t kb = w.k_blocks(), blob = w.blob_bytes();
  // With a g_idx (perm) ONNX Runtime dequantizes B and multiplies in fp32 whatever the
  // accuracy_level says: so does nbits (int8 blocks of the permuted A would round differently).
  const int level = perm.empty() ? b.options.accuracy_level.value_or(default_level) : 0;
  const auto compute = level == 4 ? kernels::Compute::kInt8 : kernels::Compute::kFp32;
  kernels::PackOptions pack_options;
  pack_options.fp16_scales = b.options.fp16_scales;
  pack_options.pool = b.pool;
  // GGUF K-quants at about the file's size where decode is bandwidth-bound (kernels::PackOptions).
  pack_options.file_size_formats(b.pool != nullptr ? b.pool->num_threads() : 1);
  // Let the source rows' file pages go as they are packed (B, fp32 scales, zero points).
  pack_options.rows_consumed = [&](int64_t rows) {
    if (!release) return;
    release(w.codes, static_cast<size_t>(rows * kb * blob));
    release(w.scales, static_cast<size_t>(rows * kb) * sizeof(float));
    if (w.zero_points != nullptr) release(w.zero_points, static_cast<size_t>(rows * w.zp_row_bytes()));
  };
  kernels::QuantizedMatrix wm = w;
  wm.mins = mins.empty() ? nullptr : mins.data();  // read while packing only
  std::unique_ptr<kernels::PackedMatMul> packed = kernels::make_matmul_nbits(wm, compute, pack_options);

  graph::MatMulNBitsInfo info;
  info.node = n.name;
  info.K = w.K;
  info.N = w.N;
  info.bits = w.bits;
  info.block_size = w.block_size;
  info.accuracy_level = level;
  info.zero_points = w.zero_points != nullptr || w.zero_points_f != nullptr;
  info.bias = !bias.empty();
  info.packed_bytes = packed->packed_bytes();
  b.set_outputs(DType::kF32);
  return std::make_unique<MatMulNBitsOp>(b.where(), std::move(packed), std::move(bias), std::move(info),
                                         std::move(perm));
}

}  // namespace

std::unique_ptr<Op> make_matmul_nbits(OpBuild& b) {
  const onnx::Node& n = b.node;
  kernels::QuantizedMatrix w;
  w.K = n.attr_int_required("K");
  w.N = n.attr_int_required("N");
  w.bits = static_cast<int>(n.attr_int("bits", 4));
  w.block_size = static_cast<int>(n.attr_int_required("block_size"));
  b.check(w.K > 0 && w.N > 0, "K=", w.K, " and N=", w.N, " must be positive");
  b.check(w.bits == 2 || w.bits == 4 || w.bits == 8, "bits=", w.bits, " is not supported (2, 4 or 8)");
  b.check(w.block_size >= 16 && (w.block_size & (w.block_size - 1)) == 0, "block_size=", w.block_size,
          " must be a power of two >= 16");
  b.check(n.attr_int("weight_prepacked", 0) == 0, "weight_prepacked layouts are not supported");
  b.require_type(0, {DType::kF32}, "A");

  const int64_t kb = w.k_blocks(), blob = w.blob_bytes();
  const Tensor& B = b.constant(1, "B");
  b.require_type(1, {DType::kU8}, "B");
  b.check(B.numel() == w.N * kb * blob, "B '", n.inputs[1], "' has shape ", B.shape.str(), " (", B.numel(),
          " bytes) but N=", w.N, " x k_blocks=", kb, " x blob_size=", blob, " (K=", w.K, ", bits=", w.bits,
          ", block_size=", w.block_size, ") needs ", w.N * kb * blob);
  b.check(B.shape.rank != 3 || (B.shape[0] == w.N && B.shape[1] == kb && B.shape[2] == blob), "B '",
          n.inputs[1], "' has shape ", B.shape.str(), ", expected [", w.N, ",", kb, ",", blob, "]");
  w.codes = static_cast<const uint8_t*>(B.data);

  const Tensor& S = b.constant(2, "scales");
  b.require_type(2, {DType::kF32, DType::kF16, DType::kBF16}, "scales");
  b.check(S.numel() == w.N * kb && S.shape.rank <= 2, "scales '", n.inputs[2], "' has shape ", S.shape.str(),
          ", expected [", w.N * kb, "] or [", w.N, ",", kb, "] (N=", w.N, ", k_blocks=", kb, " for K=", w.K,
          ", block_size=", w.block_size, ")");
  // fp32 scales are read in place (no copy: for a 150k-row lm_head that is 17 MB less at load).
  std::vector<float> scales;
  if (S.dtype == DType::kF32) {
    w.scales = static_cast<const float*>(S.data);
  } else {
    scales = to_float_vector(S);
    w.scales = scales.data();
  }

  std::vector<float> zp_f;
  if (b.has_input(3)) {
    const Tensor& Z = b.constant(3, "zero_points");
    if (Z.dtype == DType::kU8) {
      b.check(Z.numel() == w.N * w.zp_row_bytes(), "zero_points '", n.inputs[3], "' has ", Z.numel(),
              " bytes, expected N x ceil(k_blocks*bits/8) = ", w.N * w.zp_row_bytes());
      w.zero_points = static_cast<const uint8_t*>(Z.data);
    } else {
      b.require_type(3, {DType::kF32, DType::kF16, DType::kBF16}, "zero_points");
      b.check(Z.numel() == w.N * kb, "float zero_points '", n.inputs[3], "' has ", Z.numel(),
              " elements, expected N x k_blocks = ", w.N * kb);
      zp_f = to_float_vector(Z);
      w.zero_points_f = zp_f.data();
    }
  }
  // g_idx (GPTQ act-order): element k of a row belongs to block g_idx[k]. When every block
  // holds as many elements as K order gives it, the codes are permuted at load so blocks are
  // contiguous again (position j holds original column perm[j]) and A's columns follow at run.
  std::vector<int32_t> perm;
  std::vector<uint8_t> permuted_codes;
  if (b.has_input(4)) {
    const Tensor& G = b.constant(4, "g_idx");
    b.require_type(4, {DType::kI32, DType::kI64}, "g_idx");
    b.check(G.numel() == w.K || G.numel() == kb * w.block_size, "g_idx '", n.inputs[4], "' has ", G.numel(),
            " elements, expected K=", w.K, " or k_blocks*block_size=", kb * w.block_size);
    std::vector<std::vector<int32_t>> members(static_cast<size_t>(kb));
    bool identity = true;
    for (int64_t k = 0; k < w.K; ++k) {
      const int64_t g = read_int(G, k);
      b.check(g >= 0 && g < kb, "g_idx[", k, "]=", g, " is outside [0, k_blocks=", kb, ")");
      members[static_cast<size_t>(g)].push_back(static_cast<int32_t>(k));
      identity = identity && g == k / w.block_size;
    }
    if (!identity) {
      b.check(zp_f.empty(), "g_idx with float zero points is not supported");
      b.check(!b.has_input(6), "g_idx with block mins is not supported");
      for (int64_t g = 0; g < kb; ++g) {
        const int64_t want = std::min<int64_t>(w.block_size, w.K - g * w.block_size);
        b.check(static_cast<int64_t>(members[static_cast<size_t>(g)].size()) == want, "g_idx puts ",
                members[static_cast<size_t>(g)].size(), " elements in block ", g, " where ", want,
                " fit: only a permutation of K's blocks is supported");
        perm.insert(perm.end(), members[static_cast<size_t>(g)].begin(),
                    members[static_cast<size_t>(g)].end());
      }
      permuted_codes.assign(w.codes, w.codes + w.N * kb * blob);  // padding past K kept as is
      for (int64_t r = 0; r < w.N; ++r)
        for (int64_t j = 0; j < w.K; ++j) {
          const int c = w.code(r, perm[static_cast<size_t>(j)]);
          uint8_t* byte = permuted_codes.data() + (r * kb + j / w.block_size) * blob;
          const int64_t i = j % w.block_size;
          if (w.bits == 8) {
            byte[i] = static_cast<uint8_t>(c);
          } else {
            const int per = 8 / w.bits, shift = static_cast<int>(i % per) * w.bits;
            const int mask = ((1 << w.bits) - 1) << shift;
            byte[i / per] = static_cast<uint8_t>((byte[i / per] & ~mask) | (c << shift));
          }
        }
      w.codes = permuted_codes.data();
    }
  }
  std::vector<float> bias;
  if (b.has_input(5)) {
    const Tensor& Bi = b.constant(5, "bias");
    b.require_type(5, {DType::kF32, DType::kF16, DType::kBF16}, "bias");
    b.check(Bi.numel() == w.N, "bias '", n.inputs[5], "' has ", Bi.numel(), " elements, expected N=", w.N);
    bias = to_float_vector(Bi);
  }
  std::vector<float> mins;
  if (b.has_input(6)) {
    const Tensor& M = b.constant(6, "block_mins");
    b.require_type(6, {DType::kF32}, "block_mins");
    b.check(M.numel() == w.N * kb, "block_mins '", n.inputs[6], "' has ", M.numel(),
            " elements, expected N x k_blocks = ", w.N * kb);
    mins = to_float_vector(M);
  }
  // fp32 scales and the codes view the file: their pages can go as rows are packed.
  const bool views_file = S.dtype == DType::kF32 && perm.empty();
  return pack_matmul(b, w, std::move(bias), static_cast<int>(n.attr_int("accuracy_level", 0)),
                     views_file ? b.release_pages : ReleasePages{}, std::move(mins), std::move(perm));
}

namespace {

// graph/rewrites.h fuse_matmul_nbits_groups: MatMulNBitsGroup (one output per weight) and
// MatMulNBitsSiluMul (gate and up, one output: silu(gate) * up). Each weight is validated and
// packed by make_matmul_nbits as the node it replaces (its error messages name that node), then
// kernels::MatMulGroup runs them on one quantized A with one fork/join.
class MatMulNBitsGroupOp final : public Op {
 public:
  MatMulNBitsGroupOp(std::string where, std::vector<MatMulNBitsOp::Parts> parts, bool silu_mul)
      : where_(std::move(where)), parts_(std::move(parts)), silu_mul_(silu_mul), group_(weights(), widths()) {
    const char* how = group_.shared() ? (silu_mul_ ? "group_silu_" : "group_") : (silu_mul_ ? "silu_" : "");
    for (int64_t m : {1, 2}) kernel_[m - 1] = how + std::string(parts_[0].packed->kernel_name(m));
  }

  void infer(const OpArgs& a) const override {
    const Shape& s = a.in[0]->shape;
    const int64_t K = parts_[0].info.K;
    NBITS_CHECK(s.rank >= 1 && s[s.rank - 1] == K, where_, ": input A ", s.str(), " must end in K=", K);
    for (size_t i = 0; i < a.n_out; ++i) {
      NBITS_CHECK(a.out[i] != nullptr, where_, ": output ", i, " is not produced");
      Shape y = s;
      y[y.rank - 1] = parts_[i].info.N;
      a.out[i]->shape = y;
    }
  }

  void run(const OpArgs& a, RunContext& ctx) const override {
    const float* A = a.in[0]->as<const float>();
    const int64_t rows = a.in[0]->numel() / parts_[0].info.K;
    if (rows <= 0) return;
    if (silu_mul_) {
      group_.run_silu_mul(A, rows, a.out[0]->as<float>(), bias(0), bias(1), ctx.pool);
      return;
    }
    thread_local std::vector<float*> y;  // the calling thread's: no allocation after the first run
    thread_local std::vector<const float*> b;
    y.resize(parts_.size());
    b.resize(parts_.size());
    for (size_t i = 0; i < parts_.size(); ++i) {
      y[i] = a.out[i]->as<float>();
      b[i] = bias(i);
    }
    group_.run(A, rows, y, b, ctx.pool);
  }

  // "group_<kernel>" when A is quantized once for all weights (kernels/matmul_group.h),
  // "group_silu_<kernel>" with the SiLU epilogue; the first weight's kernel otherwise.
  const char* kernel_name(const OpArgs& a) const override {
    return kernel_[a.in[0]->numel() / parts_[0].info.K == 1 ? 0 : 1].c_str();
  }
  std::vector<graph::MatMulNBitsInfo> nbits_info() const override {
    std::vector<graph::MatMulNBitsInfo> r;
    for (const auto& p : parts_) {
      r.push_back(p.info);
      r.back().kernel = p.packed->kernel_name(1);
      r.back().prefill_kernel = p.packed->kernel_name(kPrefillRows);
      r.back().group = where_;
    }
    return r;
  }
  size_t packed_weight_bytes() const override {
    size_t n = 0;
    for (const auto& p : parts_) n += p.packed->packed_bytes() + p.bias.size() * sizeof(float);
    return n;
  }
  bool reads_constant_at_run(size_t input) const override { return input == 0; }

 private:
  const float* bias(size_t i) const { return parts_[i].bias.empty() ? nullptr : parts_[i].bias.data(); }
  std::vector<const kernels::PackedMatMul*> weights() const {
    std::vector<const kernels::PackedMatMul*> w;
    for (const auto& p : parts_) w.push_back(p.packed.get());
    return w;
  }
  std::vector<int64_t> widths() const {
    std::vector<int64_t> n;
    for (const auto& p : parts_) n.push_back(p.info.N);
    return n;
  }

  std::string where_;
  std::vector<MatMulNBitsOp::Parts> parts_;
  bool silu_mul_;
  kernels::MatMulGroup group_;
  std::string kernel_[2];  // M = 1, M > 1
};

std::unique_ptr<Op> make_group(OpBuild& b, bool silu_mul) {
  const onnx::Node& n = b.node;
  const std::vector<int64_t> widths = n.attr_ints("N");
  const onnx::Attribute* names = n.attr("names");
  const size_t count = widths.size();
  b.check(
      count >= 2 && n.inputs.size() == 1 + 4 * count && names != nullptr && names->strings.size() == count,
      "expects A and 4 inputs (B, scales, zero_points, bias) per weight, N and names for each; got ",
      n.inputs.size(), " inputs for ", count, " widths");
  b.check(!silu_mul || (count == 2 && widths[0] == widths[1] && n.outputs.size() == 1),
          "gate and up must have one N and the node one output");
  b.check(silu_mul || n.outputs.size() == count, n.outputs.size(), " outputs for ", count, " weights");
  std::vector<MatMulNBitsOp::Parts> parts;
  for (size_t i = 0; i < count; ++i) {
    onnx::Node m;
    m.name = names->strings[i];
    m.op_type = "MatMulNBits";
    m.domain = "com.microsoft";
    // The original input slots: A, B, scales, zero_points, g_idx (none: A is never permuted), bias.
    const size_t slot[6] = {0, 1 + 4 * i, 2 + 4 * i, 3 + 4 * i, SIZE_MAX, 4 + 4 * i};
    OpBuild sub{m, {}, {}, {}, b.options, b.release_pages, b.mapping, b.pool, b.opset};
    for (size_t j : slot) {
      m.inputs.push_back(j == SIZE_MAX ? std::string() : n.inputs[j]);
      sub.in_types.push_back(j == SIZE_MAX ? std::optional<DType>() : b.in_types[j]);
      sub.constants.push_back(j == SIZE_MAX ? nullptr : b.constant_or_null(j));
    }
    for (const char* attr : {"K", "bits", "block_size", "accuracy_level"})
      if (const onnx::Attribute* at = n.attr(attr)) m.attributes.push_back(*at);
    onnx::Attribute width;
    width.name = "N";
    width.type = onnx::AttrType::kInt;
    width.i = widths[i];
    m.attributes.push_back(width);
    std::unique_ptr<Op> op = make_matmul_nbits(sub);  // always a MatMulNBitsOp
    parts.push_back(std::move(*static_cast<MatMulNBitsOp*>(op.get())).release());
  }
  b.set_outputs(DType::kF32);
  return std::make_unique<MatMulNBitsGroupOp>(b.where(), std::move(parts), silu_mul);
}

}  // namespace

std::unique_ptr<Op> make_matmul_nbits_group(OpBuild& b) { return make_group(b, false); }
std::unique_ptr<Op> make_matmul_nbits_silu_mul(OpBuild& b) { return make_group(b, true); }

// MatMul(A, DequantizeLinear(W, scale, zero_point)) with a constant block-wise
// W [K, N] (int4/uint4/int8/uint8, axis 0, block_size) from use_qdq exports:
// rewritten at load (graph/rewrites.h fuse_dequantize_matmul) and packed like
// MatMulNBits. W is transposed into MatMulNBits' [N][k_blocks][blob] unsigned
// codes (signed codes + 2^(bits-1), the zero point shifted alike).
std::unique_ptr<Op> make_matmul_dequantized(OpBuild& b) {
  const onnx::Node& n = b.node;
  b.require_type(0, {DType::kF32}, "A");
  const Tensor& W = b.constant(1, "W");
  b.require_type(1, {DType::kI4, DType::kU4, DType::kI8, DType::kU8}, "W");
  b.check(W.shape.rank == 2, "W '", n.inputs[1], "' must be 2-D [K, N], got ", W.shape.str());
  kernels::QuantizedMatrix w;
  w.K = W.shape[0];
  w.N = W.shape[1];
  w.bits = W.dtype == DType::kI4 || W.dtype == DType::kU4 ? 4 : 8;
  w.block_size = static_cast<int>(n.attr_int_required("block_size"));
  b.check(w.block_size >= 16 && (w.block_size & (w.block_size - 1)) == 0, "block_size=", w.block_size,
          " must be a power of two >= 16");
  const bool is_signed = W.dtype == DType::kI4 || W.dtype == DType::kI8;
  const int offset = is_signed ? 1 << (w.bits - 1) : 0;
  const int64_t kb = w.k_blocks(), blob = w.blob_bytes(), K = w.K, N = w.N;
  const Tensor& S = b.constant(2, "scale");
  b.require_type(2, {DType::kF32}, "scale");
  b.check(S.shape.rank == 2 && S.shape[0] == kb && S.shape[1] == N, "scale '", n.inputs[2], "' has shape ",
          S.shape.str(), ", expected [", kb, ",", N, "] (K=", K, ", block_size=", w.block_size, ")");
  const Tensor* Z = b.has_input(3) ? &b.constant(3, "zero_point") : nullptr;
  if (Z) {
    b.check(Z->dtype == W.dtype && Z->shape == S.shape, "zero_point '", n.inputs[3], "' must be ",
            graph::dtype_name(W.dtype), " ", S.shape.str(), ", got ", graph::dtype_name(Z->dtype), " ",
            Z->shape.str());
  }
  // Element i of a 4/8-bit tensor as a signed or unsigned integer.
  auto element = [&](const Tensor& t, int64_t i) -> int {
    const auto* p = static_cast<const uint8_t*>(t.data);
    if (w.bits == 8) return is_signed ? static_cast<int8_t>(p[i]) : p[i];
    const int v = (p[i / 2] >> (4 * (i % 2))) & 15;
    return is_signed && v >= 8 ? v - 16 : v;
  };
  std::vector<uint8_t> codes(static_cast<size_t>(N * kb * blob), 0);
  std::vector<float> scales(static_cast<size_t>(N * kb));
  // Explicit zero points unless the implicit 2^(bits-1) of signed codes applies
  // (unsigned codes without zero_point have zero point 0).
  const bool explicit_zp = Z != nullptr || !is_signed;
  std::vector<uint8_t> zps(explicit_zp ? static_cast<size_t>(N * w.zp_row_bytes()) : 0, 0);
  for (int64_t nn = 0; nn < N; ++nn)
    for (int64_t blk = 0; blk < kb; ++blk) {
      const int zp = (Z ? element(*Z, blk * N + nn) : 0) + offset;
      scales[static_cast<size_t>(nn * kb + blk)] = static_cast<const float*>(S.data)[blk * N + nn];
      if (explicit_zp) {
        uint8_t& z = zps[static_cast<size_t>(nn * w.zp_row_bytes() + blk * w.bits / 8)];
        z |= static_cast<uint8_t>(w.bits == 8 ? zp : zp << (4 * (blk % 2)));
      }
      uint8_t* dst = codes.data() + (nn * kb + blk) * blob;
      for (int64_t j = 0; j < w.block_size; ++j) {
        const int64_t k = blk * w.block_size + j;
        const int c = k < K ? element(W, k * N + nn) + offset : zp;  // past K: dequantizes to 0
        if (w.bits == 8)
          dst[j] = static_cast<uint8_t>(c);
        else
          dst[j / 2] |= static_cast<uint8_t>(c << (4 * (j % 2)));
      }
    }
  w.codes = codes.data();
  w.scales = scales.data();
  w.zero_points = explicit_zp ? zps.data() : nullptr;
  // ORT fuses DequantizeLinear + MatMul into MatMulNBits at accuracy level 4 by default
  // (session option session.qdq_matmulnbits_accuracy_level). The codes and scales made here go
  // as they are packed.
  return pack_matmul(b, w, {}, 4, release_anonymous_pages);
}

std::unique_ptr<Op> make_requantized_matmul(OpBuild& b, int64_t K, int64_t N,
                                            float (*at)(const void*, int64_t), const void* data, int bits,
                                            bool b_nk) {
  // Element (k, n) of B: [K, N] row-major, or [N, K] (b_nk: a tied embedding read untransposed).
  const int64_t stride_k = b_nk ? 1 : N, stride_n = b_nk ? K : 1;
  kernels::QuantizedMatrix w;
  w.K = K;
  w.N = N;
  w.bits = bits;
  w.block_size = 32;
  const int64_t kb = w.k_blocks(), blob = w.blob_bytes();
  const int qmax = bits == 8 ? 127 : 7, offset = 1 << (bits - 1);  // codes q + offset, zero point implicit
  std::vector<uint8_t> codes(static_cast<size_t>(N * kb * blob), 0);
  std::vector<float> scales(static_cast<size_t>(N * kb));
  // A B stored [N, K] (a tied embedding, which the Gather still reads at run) gives its file
  // pages back as its rows are quantized: the Gather maps again only the rows it looks up, so
  // the load's peak does not hold the whole fp32 table (545 MB for Qwen2.5's vocabulary).
  const Tensor* source = b.constant_or_null(1);
  const size_t row_bytes = b_nk && source != nullptr ? static_cast<size_t>(K) * dtype_size(source->dtype) : 0;
  // Rows are released 256 at a time, so the pages a thread has touched and not yet given back
  // stay a few hundred KiB whatever its share of the N rows (each release starts at the chunk
  // before, so the page two chunks share goes too).
  auto release_rows = [&](int64_t n0, int64_t n1) {
    if (row_bytes > 0 && b.release_pages)
      b.release_pages(static_cast<const uint8_t*>(data) + static_cast<size_t>(n0) * row_bytes,
                      static_cast<size_t>(n1 - n0) * row_bytes);
  };
  auto quantize_rows = [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n)
      for (int64_t blk = 0; blk < kb; ++blk) {
        const int64_t k0 = blk * 32, k1 = std::min<int64_t>(K, k0 + 32);
        float amax = 0;
        for (int64_t k = k0; k < k1; ++k)
          amax = std::max(amax, std::fabs(at(data, k * stride_k + n * stride_n)));
        const float scale = amax / static_cast<float>(qmax);
        const float inv = scale > 0 ? 1.0f / scale : 0.0f;
        scales[static_cast<size_t>(n * kb + blk)] = scale;
        uint8_t* dst = codes.data() + (n * kb + blk) * blob;
        for (int64_t j = 0; j < 32; ++j) {
          const int64_t k = k0 + j;
          const int q =
              k < K
                  ? std::clamp(static_cast<int>(std::nearbyint(at(data, k * stride_k + n * stride_n) * inv)),
                               -qmax, qmax)
                  : 0;
          const int c = q + offset;
          if (bits == 8)
            dst[j] = static_cast<uint8_t>(c);
          else
            dst[j / 2] |= static_cast<uint8_t>(c << (4 * (j % 2)));
        }
      }
  };
  auto quantize_columns = [&](int64_t n0, int64_t n1) {
    for (int64_t s = n0; s < n1; s += 256) {
      const int64_t e = std::min<int64_t>(n1, s + 256);
      quantize_rows(s, e);
      release_rows(std::max(n0, s - 256), e);
    }
  };
  if (b.pool != nullptr)
    b.pool->parallel_range(N, 16, quantize_columns);
  else
    quantize_columns(0, N);
  w.codes = codes.data();
  w.scales = scales.data();
  // int8 activations unless --accuracy-level says otherwise (the weights are already rounded).
  // The codes and scales made here go as they are packed (the load's peak holds the packed
  // copy and a slice of them, not both whole: 85 MB for Qwen2.5's tied lm_head).
  return pack_matmul(b, w, {}, 4, release_anonymous_pages);
}

}  // namespace nbits::ops
