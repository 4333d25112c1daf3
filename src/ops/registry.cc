// Name -> factory table of every supported op.
#include <string_view>

#include "ops/ops.h"

namespace nbits::graph {

OpFactory find_op(const std::string& domain, const std::string& op_type) {
  struct Entry {
    std::string_view domain, op_type;
    OpFactory make;
  };
  static constexpr std::string_view kOnnx = "", kMs = "com.microsoft", kInternal = "nbits.internal";
  static const Entry kTable[] = {
      {kMs, "MatMulNBits", ops::make_matmul_nbits},
      {kMs, "GroupQueryAttention", ops::make_group_query_attention},
      {kMs, "SkipSimplifiedLayerNormalization", ops::make_skip_simplified_layer_norm},
      {kMs, "GatherBlockQuantized", ops::make_gather_block_quantized},
      // ORT registers SimplifiedLayerNormalization in the ONNX domain; accept both.
      {kOnnx, "SimplifiedLayerNormalization", ops::make_simplified_layer_norm},
      {kMs, "SimplifiedLayerNormalization", ops::make_simplified_layer_norm},
      {kOnnx, "MatMul", ops::make_matmul},
      {kOnnx, "Gather", ops::make_gather},
      {kOnnx, "Add", ops::make_add},
      {kOnnx, "Sub", ops::make_sub},
      {kOnnx, "Mul", ops::make_mul},
      {kOnnx, "Div", ops::make_div},
      {kOnnx, "Sigmoid", ops::make_sigmoid},
      {kInternal, "SiluMul", ops::make_silu_mul},
      {kOnnx, "Cast", ops::make_cast},
      {kOnnx, "Identity", ops::make_identity},
      {kOnnx, "Reshape", ops::make_reshape},
      {kOnnx, "Squeeze", ops::make_squeeze},
      {kOnnx, "Unsqueeze", ops::make_unsqueeze},
      {kOnnx, "Transpose", ops::make_transpose},
      {kOnnx, "Shape", ops::make_shape},
      {kOnnx, "ReduceSum", ops::make_reduce_sum},
      {kOnnx, "Constant", ops::make_constant},
      {kOnnx, "Concat", ops::make_concat},
      {kOnnx, "Slice", ops::make_slice},
  };
  const std::string_view d = domain == "ai.onnx" ? kOnnx : std::string_view(domain);
  for (const Entry& e : kTable)
    if (e.domain == d && e.op_type == op_type) return e.make;
  return nullptr;
}

}  // namespace nbits::graph
