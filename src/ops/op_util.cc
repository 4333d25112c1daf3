#include "ops/op_util.h"

#include "base/fp16.h"

namespace nbits::ops {

int64_t read_int(const Tensor& t, int64_t i) {
  switch (t.dtype) {
    case DType::kI64:
      return t.as<const int64_t>()[i];
    case DType::kI32:
      return t.as<const int32_t>()[i];
    default:
      fail("expected an int64 or int32 tensor, got ", graph::dtype_name(t.dtype));
  }
}

std::vector<int64_t> read_ints(const Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = read_int(t, i);
  return v;
}

int normalize_axis(int64_t axis, int rank, const std::string& where) {
  NBITS_CHECK(axis >= -rank && axis < rank, where, ": axis ", axis, " out of range for rank ", rank);
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& where) {
  Shape out;
  out.rank = a.rank > b.rank ? a.rank : b.rank;
  for (int i = 0; i < out.rank; ++i) {
    const int ia = i - (out.rank - a.rank), ib = i - (out.rank - b.rank);
    const int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    NBITS_CHECK(da == db || da == 1 || db == 1, where, ": shapes ", a.str(), " and ", b.str(),
                " cannot be broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t dims_product(const Shape& s, int from, int to) {
  int64_t n = 1;
  for (int i = from; i < to; ++i) n *= s[i];
  return n;
}

void broadcast_strides(const Shape& s, int rank, int64_t* strides) {
  int64_t st = 1;
  for (int i = rank - 1; i >= 0; --i) {
    const int is = i - (rank - s.rank);
    if (is < 0 || s[is] == 1) {
      strides[i] = 0;
    } else {
      strides[i] = st;
    }
    if (is >= 0) st *= s[is];
  }
}

void allow_attributes(const graph::OpBuild& b, std::initializer_list<std::string_view> known) {
  for (const onnx::Attribute& at : b.node.attributes) {
    bool ok = false;
    for (std::string_view k : known) ok = ok || at.name == k;
    b.check(ok, "attribute '", at.name, "' is not supported");
  }
}

bool is_float_type(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

float load_float(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::kF32:
      return static_cast<const float*>(p)[i];
    case DType::kF16:
      return fp16_to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::kBF16:
      return bf16_to_float(static_cast<const uint16_t*>(p)[i]);
    default:
      NBITS_ASSERT(false);
  }
}

void store_float(void* p, DType t, int64_t i, float v) {
  switch (t) {
    case DType::kF32:
      static_cast<float*>(p)[i] = v;
      return;
    case DType::kF16:
      static_cast<uint16_t*>(p)[i] = float_to_fp16(v);
      return;
    case DType::kBF16:
      static_cast<uint16_t*>(p)[i] = float_to_bf16(v);
      return;
    default:
      NBITS_ASSERT(false);
  }
}

std::vector<float> to_float_vector(const Tensor& t) {
  NBITS_ASSERT(is_float_type(t.dtype));
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = load_float(t.data, t.dtype, i);
  return v;
}

}  // namespace nbits::ops
