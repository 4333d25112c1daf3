// Helpers shared by the op families: integer reads of small shape tensors,
// axis normalisation, broadcasting.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/op.h"

namespace nbits::ops {

using graph::DType;
using graph::Shape;
using graph::Tensor;

// Element i of an int64/int32 tensor as int64 (throws on other dtypes).
int64_t read_int(const Tensor& t, int64_t i);
// All elements of a small int tensor (load-time use only: allocates).
std::vector<int64_t> read_ints(const Tensor& t);
// Axis in [-rank, rank) -> [0, rank); throws naming `where`.
int normalize_axis(int64_t axis, int rank, const std::string& where);
// Numpy broadcast of two shapes; throws naming `where` when incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& where);
// Product of dims [from, to).
int64_t dims_product(const Shape& s, int from, int to);
// Strides (in elements) of `s` as seen from an output of rank `rank`
// (right-aligned; broadcast dims get stride 0).
void broadcast_strides(const Shape& s, int rank, int64_t* strides);
// Element conversions for Cast and fp16 constants.
float load_float(const void* p, DType t, int64_t i);
void store_float(void* p, DType t, int64_t i, float v);
bool is_float_type(DType t);
// Whole-tensor fp32 copy of a float/float16/bfloat16 constant (load time).
std::vector<float> to_float_vector(const Tensor& t);

}  // namespace nbits::ops
