// Runtime tensors of the graph executor: dtype + shape + pointer (not owning).
// Shapes are fixed-capacity so a step allocates nothing.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "base/error.h"

namespace nbits::graph {

// kU4/kI4: two elements per byte, element 0 in the low nibble (constants only).
enum class DType : uint8_t { kF32, kF16, kBF16, kI64, kI32, kU8, kI8, kBool, kU4, kI4 };

size_t dtype_size(DType t);                  // bytes per element (1 for the 4-bit types)
size_t dtype_bytes(DType t, int64_t numel);  // storage bytes of numel elements (4-bit: rounded up)
const char* dtype_name(DType t);

// Inside a session every float value is fp32: fp16/bf16 exist only at graph
// inputs/outputs and in initializers, converted at the boundary (docs/design.md
// "Precision"). An op whose attribute names a float dtype produces this one.
inline DType compute_dtype(DType t) { return (t == DType::kF16 || t == DType::kBF16) ? DType::kF32 : t; }

struct Shape {
  static constexpr int kMaxRank = 8;
  int rank = 0;
  std::array<int64_t, kMaxRank> d{};

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) {
    NBITS_ASSERT(dims.size() <= kMaxRank);
    for (int64_t v : dims) d[rank++] = v;
  }
  int64_t operator[](int i) const { return d[i]; }
  int64_t& operator[](int i) { return d[i]; }
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= d[i];
    return n;
  }
  void push_back(int64_t v) {
    NBITS_CHECK(rank < kMaxRank, "tensor rank above ", kMaxRank, " is not supported");
    d[rank++] = v;
  }
  bool operator==(const Shape& o) const {
    if (rank != o.rank) return false;
    for (int i = 0; i < rank; ++i)
      if (d[i] != o.d[i]) return false;
    return true;
  }
  std::string str() const;  // "[1,7,64]"
};

struct Tensor {
  DType dtype = DType::kF32;
  Shape shape;
  void* data = nullptr;
  // Batch rows apart (null: dense): row b of dimension 0 is the contiguous block at rows[b]
  // (data == rows[0]). Only ops whose Op::takes_row_pointers says so see such a tensor (the
  // batched decode step's per-session KV caches); Session::bind_input/bind_output check.
  void* const* rows = nullptr;

  int64_t numel() const { return shape.numel(); }
  size_t bytes() const { return dtype_bytes(dtype, numel()); }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data);
  }
};

}  // namespace nbits::graph
