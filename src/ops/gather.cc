// Gather (any dtype: fp32 embeddings, int64 shape values) and
// com.microsoft GatherBlockQuantized (4-bit / 8-bit quantized embeddings).
// Rows of a large table in the mapped model are copied with pread (TableRows),
// not touched through the mapping, so a prompt's rows do not map the page-cache
// folios around them into the process (megabytes of RSS per row on Linux 6.x).
#include <cstring>
#include <vector>

#include "base/fp16.h"
#include "ops/op_util.h"
#include "ops/ops.h"

namespace nbits::ops {
namespace {

using graph::OpArgs;
using graph::RunContext;

// Rows of one constant table: copied out of the mapped model file with
// MappedFile::read when the table is large (>= 1 MiB) and lies in it; otherwise
// read in place.
class TableRows {
 public:
  TableRows() = default;
  TableRows(const OpBuild& b, const void* table, size_t bytes)
      : file_(table != nullptr && bytes >= (size_t{1} << 20) && b.mapping ? b.mapping(table, bytes)
                                                                          : nullptr) {}
  // Copies row bytes [p, p + n) to dst.
  void copy(const uint8_t* p, size_t n, uint8_t* dst) const {
    if (file_ == nullptr || !file_->read(p, n, dst)) std::memcpy(dst, p, n);
  }
  // Whether rows are read by copy from the mapped file (never through the mapping).
  bool copies_from_file() const { return file_ != nullptr; }
  // Row bytes [p, p + n): p itself for a table read in place, else a copy in buf.
  const uint8_t* row(const uint8_t* p, size_t n, std::vector<uint8_t>& buf) const {
    if (file_ == nullptr) return p;
    buf.resize(n);
    copy(p, n, buf.data());
    return buf.data();
  }

 private:
  const MappedFile* file_ = nullptr;
};

class GatherOp final : public Op {
 public:
  GatherOp(std::string where, int64_t axis, TableRows table)
      : where_(std::move(where)), axis_(axis), table_(table) {}
  void infer(const OpArgs& a) const override {
    const Shape& d = a.in[0]->shape;
    const Shape& idx = a.in[1]->shape;
    const int ax = normalize_axis(axis_, d.rank, where_);
    NBITS_CHECK(d.rank - 1 + idx.rank <= Shape::kMaxRank, where_, ": output rank too large");
    Shape s;
    for (int i = 0; i < ax; ++i) s.push_back(d[i]);
    for (int i = 0; i < idx.rank; ++i) s.push_back(idx[i]);
    for (int i = ax + 1; i < d.rank; ++i) s.push_back(d[i]);
    a.out[0]->shape = s;
  }
  void run(const OpArgs& a, RunContext&) const override {
    const Tensor& data = *a.in[0];
    const Tensor& idx = *a.in[1];
    const int ax = normalize_axis(axis_, data.shape.rank, where_);
    const int64_t outer = dims_product(data.shape, 0, ax), dim = data.shape[ax];
    const size_t row = static_cast<size_t>(dims_product(data.shape, ax + 1, data.shape.rank)) *
                       graph::dtype_size(data.dtype);
    const int64_t n = idx.numel();
    const auto* src = static_cast<const uint8_t*>(data.data);
    auto* dst = static_cast<uint8_t*>(a.out[0]->data);
    const bool widen = a.out[0]->dtype != data.dtype;  // half rows -> fp32
    const int64_t row_elems = static_cast<int64_t>(row / graph::dtype_size(data.dtype));
    std::vector<uint8_t> buf;
    for (int64_t i = 0; i < n; ++i) {
      int64_t k = read_int(idx, i);
      NBITS_CHECK(k >= -dim && k < dim, where_, ": index ", k, " out of range [", -dim, ", ", dim, ")");
      if (k < 0) k += dim;
      for (int64_t o = 0; o < outer; ++o) {
        const uint8_t* from = src + (o * dim + k) * row;
        if (!widen) {
          table_.copy(from, row, dst + (o * n + i) * row);
          continue;
        }
        from = table_.row(from, row, buf);
        float* y = reinterpret_cast<float*>(dst) + (o * n + i) * row_elems;
        for (int64_t e = 0; e < row_elems; ++e)  // the table may be misaligned (onnx/model.h)
          y[e] = data.dtype == DType::kBF16 ? bf16_to_float(load_u16(from, e))
                                            : fp16_to_float(load_u16(from, e));
      }
    }
  }
  bool maps_constant_at_run(size_t input) const override { return input != 0 || !table_.copies_from_file(); }

 private:
  std::string where_;
  int64_t axis_;
  TableRows table_;
};

// Rows of quantized codes, dequantized as (q - zp) * scale per block along the row (+ the
// block's min where nbits' internal input 4 gives them: GGUF Q4_1 / Q4_K / Q5_K tables).
class GatherBlockQuantizedOp final : public Op {
 public:
  struct Params {
    DType data_type;     // kU8 (packed `bits`), kU4, kI4
    int bits;            // element bits (4 or 8; 2 for uint8 packed)
    int64_t rows, cols;  // logical elements
    int64_t block;
    const uint8_t* codes;        // row-major, packed along cols
    std::vector<float> scales;   // [rows * k_blocks]
    const uint8_t* zero_points;  // packed like the data, or null
    std::vector<float> mins;     // [rows * k_blocks] added after the scale, or empty
    DType out_type;
  };
  GatherBlockQuantizedOp(std::string where, Params p, TableRows codes, TableRows zero_points)
      : where_(std::move(where)), p_(std::move(p)), codes_(codes), zps_(zero_points) {}

  void infer(const OpArgs& a) const override {
    const Shape& idx = a.in[1]->shape;
    NBITS_CHECK(idx.rank + 1 <= Shape::kMaxRank, where_, ": indices rank too large");
    Shape s = idx;
    s.push_back(p_.cols);
    a.out[0]->shape = s;
  }

  void run(const OpArgs& a, RunContext&) const override {
    const Tensor& idx = *a.in[1];
    Tensor& y = *a.out[0];
    const int64_t kb = k_blocks(), per_byte = 8 / p_.bits;
    const auto code_bytes = static_cast<size_t>((p_.cols + per_byte - 1) / per_byte);
    const auto zp_bytes = static_cast<size_t>((kb + per_byte - 1) / per_byte);
    std::vector<uint8_t> code_buf, zp_buf;
    for (int64_t i = 0; i < idx.numel(); ++i) {
      int64_t r = read_int(idx, i);
      if (r < 0) r += p_.rows;
      const int64_t base = i * p_.cols;
      if (r < 0 || r >= p_.rows) {  // ORT: out-of-range rows read as zeros
        for (int64_t c = 0; c < p_.cols; ++c) graph_store(y, base + c, 0.0f);
        continue;
      }
      // Row r alone, its codes (and zero points) read in place or copied out of the file.
      const uint8_t* codes = codes_.row(p_.codes + r * code_bytes, code_bytes, code_buf);
      const uint8_t* zps =
          p_.zero_points == nullptr ? nullptr : zps_.row(p_.zero_points + r * zp_bytes, zp_bytes, zp_buf);
      for (int64_t c = 0; c < p_.cols; ++c) {
        const int64_t b = c / p_.block;
        float v = static_cast<float>(element(codes, p_.cols, c) - zero_point(zps, b)) * p_.scales[r * kb + b];
        if (!p_.mins.empty()) v += p_.mins[static_cast<size_t>(r * kb + b)];
        graph_store(y, base + c, v);
      }
    }
  }

 private:
  int64_t k_blocks() const { return (p_.cols + p_.block - 1) / p_.block; }
  static void graph_store(Tensor& y, int64_t i, float v) { store_float(y.data, y.dtype, i, v); }
  // Element e of a packed stream (row-major over the logical matrix; rows start on byte boundaries).
  int element(const uint8_t* base, int64_t row_elems, int64_t e) const {
    const int64_t r = e / row_elems, c = e % row_elems;
    const int per_byte = 8 / p_.bits;
    const int64_t row_bytes = (row_elems + per_byte - 1) / per_byte;
    const uint8_t byte = base[r * row_bytes + c / per_byte];
    const int v = (byte >> ((c % per_byte) * p_.bits)) & ((1 << p_.bits) - 1);
    if (p_.data_type == DType::kI4) return v >= 8 ? v - 16 : v;
    return v;
  }
  // Zero point of block zb of a row whose packed zero points start at zps (null: none).
  int zero_point(const uint8_t* zps, int64_t zb) const {
    if (zps == nullptr) return p_.data_type == DType::kU8 ? 1 << (p_.bits - 1) : 0;
    return element(zps, k_blocks(), zb);
  }
  std::string where_;
  Params p_;
  TableRows codes_, zps_;
};

}  // namespace

std::unique_ptr<Op> make_gather(OpBuild& b) {
  b.require_type(1, {DType::kI64, DType::kI32}, "indices");
  b.check(b.type(0) != DType::kU4 && b.type(0) != DType::kI4, "4-bit data needs GatherBlockQuantized");
  // Half data is a constant kept in half precision (graph/rewrites.h): rows widen to fp32.
  b.set_outputs(graph::compute_dtype(b.type(0)));
  const Tensor* table = b.constant_or_null(0);
  return std::make_unique<GatherOp>(
      b.where(), b.node.attr_int("axis", 0),
      table != nullptr ? TableRows(b, table->data, table->bytes()) : TableRows());
}

std::unique_ptr<Op> make_gather_block_quantized(OpBuild& b) {
  const Tensor& data = b.constant(0, "data");
  b.require_type(0, {DType::kU8, DType::kU4, DType::kI4}, "data");
  b.require_type(1, {DType::kI64, DType::kI32}, "indices");
  const Tensor& scales = b.constant(2, "scales");
  b.require_type(2, {DType::kF32, DType::kF16, DType::kBF16}, "scales");
  b.check(data.shape.rank == 2, "data must be 2-D, got ", data.shape.str());
  const int64_t gather_axis = b.node.attr_int("gather_axis", 0);
  const int64_t quantize_axis = b.node.attr_int("quantize_axis", 1);
  b.check(gather_axis == 0, "only gather_axis=0 is supported (got ", gather_axis, ")");
  b.check(quantize_axis == 1 || quantize_axis == -1, "only quantize_axis=last is supported (got ",
          quantize_axis, ")");
  GatherBlockQuantizedOp::Params p;
  p.data_type = data.dtype;
  p.bits = static_cast<int>(b.node.attr_int("bits", 4));
  p.block = b.node.attr_int("block_size", 128);
  b.check(p.block >= 16 && (p.block & (p.block - 1)) == 0, "block_size=", p.block,
          " must be a power of two >= 16");
  p.rows = data.shape[0];
  if (data.dtype == DType::kU8) {
    b.check(p.bits == 2 || p.bits == 4 || p.bits == 8, "bits=", p.bits, " must be 2, 4 or 8 for uint8 data");
    p.cols = data.shape[1] * (8 / p.bits);
  } else {
    b.check(p.bits == 4, "bits=", p.bits, " must be 4 for int4/uint4 data");
    b.check(data.shape[1] % 2 == 0, "int4/uint4 data needs an even row length, got ", data.shape.str());
    p.cols = data.shape[1];
  }
  const int64_t kb = (p.cols + p.block - 1) / p.block;
  b.check(scales.numel() == p.rows * kb &&
              (scales.shape.rank == 1 || (scales.shape.rank == 2 && scales.shape[0] == p.rows)),
          "scales has shape ", scales.shape.str(), ", expected [", p.rows, ",", kb, "] (block_size ", p.block,
          ")");
  p.codes = static_cast<const uint8_t*>(data.data);
  p.scales = to_float_vector(scales);
  p.zero_points = nullptr;
  if (b.has_input(3)) {
    const Tensor& zp = b.constant(3, "zero_points");
    b.check(zp.dtype == data.dtype, "zero_points dtype ", graph::dtype_name(zp.dtype),
            " differs from data dtype ", graph::dtype_name(data.dtype));
    const int64_t per_byte = 8 / p.bits;
    const int64_t want = data.dtype == DType::kU8 ? p.rows * ((kb + per_byte - 1) / per_byte) : p.rows * kb;
    const int64_t have = data.dtype == DType::kU8 ? zp.numel() : zp.numel();
    b.check(have == want, "zero_points has ", have, " elements, expected ", want);
    b.check(data.dtype == DType::kU8 || kb % 2 == 0,
            "int4 zero_points with an odd block count are not supported");
    p.zero_points = static_cast<const uint8_t*>(zp.data);
  }
  // Input 4, nbits' own (not in the ONNX schema): fp32 block mins, [rows * k_blocks].
  if (b.has_input(4)) {
    const Tensor& mins = b.constant(4, "mins");
    b.require_type(4, {DType::kF32}, "mins");
    b.check(mins.numel() == p.rows * kb, "mins has ", mins.numel(), " elements, expected ", p.rows * kb);
    p.mins = to_float_vector(mins);
  }
  p.out_type = b.type(2);
  b.set_outputs(p.out_type);
  const Tensor* zp = b.has_input(3) ? &b.constant(3, "zero_points") : nullptr;
  const TableRows codes(b, data.data, data.bytes());
  const TableRows zps = zp != nullptr ? TableRows(b, zp->data, zp->bytes()) : TableRows();
  return std::make_unique<GatherBlockQuantizedOp>(b.where(), std::move(p), codes, zps);
}

}  // namespace nbits::ops
