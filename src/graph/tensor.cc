#include "graph/tensor.h"

#include <sstream>

namespace nbits::graph {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kF32:
    case DType::kI32:
      return 4;
    case DType::kF16:
    case DType::kBF16:
      return 2;
    case DType::kI64:
      return 8;
    case DType::kU8:
    case DType::kI8:
    case DType::kBool:
    case DType::kU4:
    case DType::kI4:
      return 1;
  }
  return 0;
}

size_t dtype_bytes(DType t, int64_t numel) {
  const auto n = static_cast<size_t>(numel);
  if (t == DType::kU4 || t == DType::kI4) return (n + 1) / 2;
  return n * dtype_size(t);
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32:
      return "float";
    case DType::kF16:
      return "float16";
    case DType::kBF16:
      return "bfloat16";
    case DType::kI64:
      return "int64";
    case DType::kI32:
      return "int32";
    case DType::kU8:
      return "uint8";
    case DType::kI8:
      return "int8";
    case DType::kBool:
      return "bool";
    case DType::kU4:
      return "uint4";
    case DType::kI4:
      return "int4";
  }
  return "?";
}

std::string Shape::str() const {
  std::ostringstream os;
  os << '[';
  for (int i = 0; i < rank; ++i) os << (i ? "," : "") << d[i];
  os << ']';
  return os.str();
}

}  // namespace nbits::graph
