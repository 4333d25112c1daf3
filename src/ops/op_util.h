// Helpers shared by the op families: integer reads of small shape tensors,
// axis normalisation, broadcasting.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string_view>
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
// Calls f(i, off) for every output index i in [begin, end), where off[k] is the element offset
// of output index i in input k under numpy broadcasting (`out` is the broadcast of the inputs).
template <size_t N, typename F>
void broadcast_walk(const Shape& out, const std::array<const Shape*, N>& in, int64_t begin, int64_t end,
                    F&& f) {
  if (begin >= end) return;
  const int64_t n = out.numel();
  bool simple = true;  // every input is either the output's size or a single element
  for (const Shape* s : in) simple = simple && (s->numel() == n || s->numel() == 1);
  int64_t off[N] = {};
  if (simple) {
    bool full[N];
    for (size_t k = 0; k < N; ++k) full[k] = in[k]->numel() == n;
    for (int64_t i = begin; i < end; ++i) {
      for (size_t k = 0; k < N; ++k) off[k] = full[k] ? i : 0;
      f(i, static_cast<const int64_t*>(off));
    }
    return;
  }
  const int rank = out.rank;
  int64_t st[N][Shape::kMaxRank], idx[Shape::kMaxRank];
  for (size_t k = 0; k < N; ++k) broadcast_strides(*in[k], rank, st[k]);
  for (int64_t d = rank - 1, rem = begin; d >= 0; --d) {
    idx[d] = rem % out[static_cast<int>(d)];
    rem /= out[static_cast<int>(d)];
    for (size_t k = 0; k < N; ++k) off[k] += idx[d] * st[k][d];
  }
  for (int64_t i = begin; i < end; ++i) {
    f(i, static_cast<const int64_t*>(off));
    for (int d = rank - 1; d >= 0; --d) {
      for (size_t k = 0; k < N; ++k) off[k] += st[k][d];
      if (++idx[d] < out[d]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= st[k][d] * idx[d];
      idx[d] = 0;
    }
  }
}
// Calls f(T{}) with T the element type of a float32 / int64 / int32 / bool dtype (float for others).
template <typename F>
void dispatch_type(DType t, F&& f) {
  switch (t) {
    case DType::kI64:
      return f(int64_t{});
    case DType::kI32:
      return f(int32_t{});
    case DType::kBool:
      return f(uint8_t{});
    default:
      return f(float{});
  }
}
// Refuses (one line naming the node and attribute) any attribute of the node not in `known`.
void allow_attributes(const graph::OpBuild& b, std::initializer_list<std::string_view> known);
// Element conversions for Cast and fp16 constants.
float load_float(const void* p, DType t, int64_t i);
void store_float(void* p, DType t, int64_t i, float v);
bool is_float_type(DType t);
// Whole-tensor fp32 copy of a float/float16/bfloat16 constant (load time).
std::vector<float> to_float_vector(const Tensor& t);

}  // namespace nbits::ops
