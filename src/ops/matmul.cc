// fp32 MatMul: A [..., M, K] x B [K, N] (or B with the same batch dims as A).
// A constant 2-D B (fp32, or fp16/bf16 kept in half precision by the session,
// graph/rewrites.h half_matmul_weights) is packed once at load into x16 panels
// of its own precision (kernels/float_x16_matmul.h).
#include <algorithm>
#include <cstring>

#include "base/fp16.h"
#include "base/mapped_file.h"
#include "kernels/float_x16_matmul.h"
#include "kernels/vector_ops.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace nbits::ops {
namespace {

using graph::OpArgs;
using graph::RunContext;

// Y[M,N] = A[M,K] * B[K,N], rows of A `a_stride` apart; columns [n0, n1) only.
// Rows go four at a time so each row of B's column chunk is loaded once per four
// rows of A (prefill), with the SIMD axpy; each y element is still the sum over k
// in order (results do not depend on the blocking).
inline void gemm_rows(const float* A, int64_t a_stride, int64_t M, int64_t K, const float* B, int64_t N,
                      float* Y, int64_t n0, int64_t n1) {
  const int64_t w = n1 - n0;
  for (int64_t m0 = 0; m0 < M; m0 += 4) {
    const int64_t rows = std::min<int64_t>(4, M - m0);
    for (int64_t r = 0; r < rows; ++r) std::fill(Y + (m0 + r) * N + n0, Y + (m0 + r) * N + n1, 0.0f);
    for (int64_t k = 0; k < K; ++k) {
      const float* b = B + k * N + n0;
      for (int64_t r = 0; r < rows; ++r)
        kernels::vec_axpy(A[(m0 + r) * a_stride + k], b, Y + (m0 + r) * N + n0, w);
    }
  }
}

class MatMulOp final : public Op {
 public:
  explicit MatMulOp(std::string where) : where_(std::move(where)) {}
  void infer(const OpArgs& a) const override {
    const Shape& sa = a.in[0]->shape;
    const Shape& sb = a.in[1]->shape;
    NBITS_CHECK(sa.rank >= 1 && sb.rank >= 2, where_, ": unsupported shapes ", sa.str(), " x ", sb.str());
    const int64_t K = sa[sa.rank - 1];
    NBITS_CHECK(sb[sb.rank - 2] == K, where_, ": inner dims differ: ", sa.str(), " x ", sb.str());
    if (sb.rank > 2) {
      NBITS_CHECK(sa.rank == sb.rank, where_, ": batched B needs A of the same rank: ", sa.str(), " x ",
                  sb.str());
      for (int i = 0; i < sa.rank - 2; ++i)
        NBITS_CHECK(sa[i] == sb[i], where_, ": batch dims differ: ", sa.str(), " x ", sb.str());
    }
    Shape s = sa;
    s[s.rank - 1] = sb[sb.rank - 1];
    if (a.last_position && s.rank >= 2) s[s.rank - 2] = 1;
    a.out[0]->shape = s;
  }
  void run(const OpArgs& a, RunContext& ctx) const override {
    const Shape& sa = a.in[0]->shape;
    const Shape& sb = a.in[1]->shape;
    const int64_t K = sa[sa.rank - 1], N = sb[sb.rank - 1];
    const int64_t M = sa.rank >= 2 ? sa[sa.rank - 2] : 1;
    const int64_t batch = a.in[0]->numel() / (M * K);
    const bool last = a.last_position && sa.rank >= 2;
    const int64_t rows = last ? 1 : M;
    const float* A = a.in[0]->as<const float>();
    const float* B = a.in[1]->as<const float>();
    float* Y = a.out[0]->as<float>();
    for (int64_t bi = 0; bi < batch; ++bi) {
      const float* Ab = A + bi * M * K + (last ? (M - 1) * K : 0);
      const float* Bb = B + (sb.rank > 2 ? bi * K * N : 0);
      float* Yb = Y + bi * rows * N;
      ctx.pool.parallel_range(N, 64,
                              [&](int64_t n0, int64_t n1) { gemm_rows(Ab, K, rows, K, Bb, N, Yb, n0, n1); });
    }
  }
  bool last_position_only() const override { return true; }
  const char* kernel_name(const OpArgs&) const override { return "sgemm_rows4"; }

 private:
  std::string where_;
};

// A [..., M, K] x constant B [K, N], packed once.
class PackedWeightMatMulOp final : public Op {
 public:
  PackedWeightMatMulOp(std::string where, kernels::PackedFloatX16 w)
      : where_(std::move(where)), w_(std::move(w)), kernel_(kernels::float_x16_best()) {}
  void infer(const OpArgs& a) const override {
    const Shape& sa = a.in[0]->shape;
    NBITS_CHECK(sa.rank >= 1 && sa[sa.rank - 1] == w_.K, where_, ": A ", sa.str(), " but B has ", w_.K,
                " rows");
    Shape s = sa;
    s[s.rank - 1] = w_.N;
    if (a.last_position && s.rank >= 2) s[s.rank - 2] = 1;
    a.out[0]->shape = s;
  }
  void run(const OpArgs& a, RunContext& ctx) const override {
    const Shape& sa = a.in[0]->shape;
    const int64_t K = w_.K, N = w_.N;
    const int64_t M = sa.rank >= 2 ? sa[sa.rank - 2] : 1;
    const int64_t batch = a.in[0]->numel() / (M * K);
    const bool last = a.last_position && sa.rank >= 2;
    const int64_t rows = last ? 1 : M;
    const float* A = a.in[0]->as<const float>();
    float* Y = a.out[0]->as<float>();
    if (M == 1) {  // one position per sequence (a batched decode step): the rows in one pass
      ctx.pool.parallel_range(w_.panels, 1,
                              [&](int64_t p0, int64_t p1) { kernel_.gemm(w_, p0, p1, batch, A, K, Y, N); });
      return;
    }
    for (int64_t bi = 0; bi < batch; ++bi) {
      const float* Ab = A + bi * M * K + (last ? (M - 1) * K : 0);
      float* Yb = Y + bi * rows * N;
      ctx.pool.parallel_range(w_.panels, 1,
                              [&](int64_t p0, int64_t p1) { kernel_.gemm(w_, p0, p1, rows, Ab, K, Yb, N); });
    }
  }
  bool last_position_only() const override { return true; }
  const char* kernel_name(const OpArgs&) const override { return kernel_.name(w_.elem); }
  size_t packed_weight_bytes() const override { return w_.data.size(); }
  bool reads_constant_at_run(size_t input) const override { return input != 1; }

 private:
  std::string where_;
  kernels::PackedFloatX16 w_;
  const kernels::FloatX16Kernel& kernel_;
};

}  // namespace

bool matmul_packs_constant_b(const graph::SessionOptions& options, DType b) {
  if (b != DType::kF32 && b != DType::kF16 && b != DType::kBF16) return false;
  // fp32 weights are packed where this CPU has a SIMD kernel for the panels (else sgemm_rows4's
  // vector axpy is faster than the scalar panel reference).
  return options.requantize_float != 0 || b != DType::kF32 ||
         kernels::float_x16_best().gemm != kernels::float_x16_ref().gemm;
}

std::unique_ptr<Op> make_matmul(OpBuild& b) {
  b.require_type(0, {DType::kF32}, "A");
  // nbits_b_nk = 1 (graph/rewrites.h read_transposed_weights): B is a constant stored [N, K], the
  // tied embedding a Transpose made the lm_head of; packed from it without a transposed copy.
  const bool b_nk = b.node.attr_int("nbits_b_nk", 0) != 0;
  const Tensor* B = b.constant_or_null(1);
  if (b_nk) {
    b.check(B != nullptr && B->shape.rank == 2 && matmul_packs_constant_b(b.options, B->dtype),
            "nbits_b_nk needs a constant 2-D float B that this CPU packs");
  }
  const int64_t K = B == nullptr ? 0 : B->shape[b_nk ? 1 : 0], N = B == nullptr ? 0 : B->shape[b_nk ? 0 : 1];
  // --requantize-float q8|q4: a constant float weight becomes a MatMulNBits-style packed matrix.
  if (b.options.requantize_float != 0 && B != nullptr && B->shape.rank == 2 && B->numel() > 0 &&
      (B->dtype == DType::kF32 || B->dtype == DType::kF16 || B->dtype == DType::kBF16)) {
    // Read by memcpy: B may be a misaligned view of the file (onnx/model.h, a tied embedding).
    float (*at)(const void*, int64_t) = B->dtype == DType::kF32 ? [](const void* d, int64_t i) {
      float f;
      std::memcpy(&f, static_cast<const uint8_t*>(d) + i * 4, 4);
      return f;
    }
    : B->dtype == DType::kF16 ? [](const void* d, int64_t i) { return fp16_to_float(load_u16(d, i)); }
                              : [](const void* d, int64_t i) { return bf16_to_float(load_u16(d, i)); };
    return make_requantized_matmul(b, K, N, at, B->data, b.options.requantize_float, b_nk);
  }
  if (b.type(1) == DType::kF16 || b.type(1) == DType::kBF16) {
    b.check(B != nullptr, "half-precision B must be a constant");
    b.check(B->shape.rank == 2, "half-precision B must be 2-D, got ", B->shape.str());
    b.set_outputs(DType::kF32);
    return std::make_unique<PackedWeightMatMulOp>(
        b.where(),
        kernels::pack_float_x16(
            B->data, K, N, b.type(1) == DType::kBF16 ? kernels::X16Float::kBF16 : kernels::X16Float::kF16,
            b.pool, b_nk));
  }
  b.require_type(1, {DType::kF32}, "B");
  b.set_outputs(DType::kF32);
  if (B != nullptr && B->shape.rank == 2 && B->numel() > 0 &&
      matmul_packs_constant_b(b.options, DType::kF32)) {
    // A tied embedding's file pages go as its panels are packed (the Gather reads its rows by
    // pread at run; the session drops the rest once every reader is built).
    const MappedFile* file = b_nk && b.mapping ? b.mapping(B->data, B->bytes()) : nullptr;
    const auto consumed = [file](const void* p, size_t n) { file->release(p, n); };
    return std::make_unique<PackedWeightMatMulOp>(
        b.where(),
        kernels::pack_float_x16(B->data, K, N, kernels::X16Float::kF32, b.pool, b_nk,
                                file != nullptr ? std::function<void(const void*, size_t)>(consumed)
                                                : std::function<void(const void*, size_t)>()));
  }
  return std::make_unique<MatMulOp>(b.where());
}

}  // namespace nbits::ops
