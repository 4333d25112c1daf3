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
      {kMs, "MoE", ops::make_ort_moe},
      {kMs, "QMoE", ops::make_ort_qmoe},
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
      {kInternal, "AttentionMaskLengths", ops::make_attention_mask_lengths},
      {kInternal, "StorageCast", ops::make_storage_cast},
      {kInternal, "MatMulDequantized", ops::make_matmul_dequantized},
      {kInternal, "MatMulNBitsGroup", ops::make_matmul_nbits_group},
      {kInternal, "MatMulNBitsSiluMul", ops::make_matmul_nbits_silu_mul},
      {kInternal, "MixtureOfExperts", ops::make_mixture_of_experts},
      {kInternal, "ShortConv", ops::make_short_conv},
      {kInternal, "PositionScale", ops::make_position_scale},
      {kOnnx, "Cast", ops::make_cast},
      {kOnnx, "Identity", ops::make_identity},
      {kOnnx, "Reshape", ops::make_reshape},
      {kOnnx, "Squeeze", ops::make_squeeze},
      {kOnnx, "Flatten", ops::make_flatten},
      {kOnnx, "Unsqueeze", ops::make_unsqueeze},
      {kOnnx, "Transpose", ops::make_transpose},
      {kOnnx, "Shape", ops::make_shape},
      {kOnnx, "ReduceSum", ops::make_reduce_sum},
      {kOnnx, "Constant", ops::make_constant},
      {kOnnx, "Concat", ops::make_concat},
      {kOnnx, "Slice", ops::make_slice},
      // attention layouts of builder exports (MHA + RotaryEmbedding)
      {kMs, "RotaryEmbedding", ops::make_rotary_embedding},
      {kOnnx, "DequantizeLinear", ops::make_dequantize_linear},
      {kOnnx, "If", ops::make_if},
      {kMs, "MultiHeadAttention", ops::make_multi_head_attention},
      // generic ai.onnx ops (builder graphs)
      {kOnnx, "LayerNormalization", ops::make_layer_norm},
      {kMs, "SkipLayerNormalization", ops::make_skip_layer_norm},
      {kOnnx, "Equal", ops::make_equal},
      {kOnnx, "Less", ops::make_less},
      {kOnnx, "Greater", ops::make_greater},
      {kOnnx, "LessOrEqual", ops::make_less_or_equal},
      {kOnnx, "GreaterOrEqual", ops::make_greater_or_equal},
      {kOnnx, "And", ops::make_and},
      {kOnnx, "Or", ops::make_or},
      {kOnnx, "Xor", ops::make_xor},
      {kOnnx, "Not", ops::make_not},
      {kOnnx, "IsNaN", ops::make_is_nan},
      {kOnnx, "IsInf", ops::make_is_inf},
      {kOnnx, "Where", ops::make_where},
      {kOnnx, "Neg", ops::make_neg},
      {kOnnx, "Sqrt", ops::make_sqrt},
      {kOnnx, "Reciprocal", ops::make_reciprocal},
      {kOnnx, "Tanh", ops::make_tanh},
      {kOnnx, "Erf", ops::make_erf},
      {kOnnx, "Exp", ops::make_exp},
      {kOnnx, "Log", ops::make_log},
      {kOnnx, "Abs", ops::make_abs},
      {kOnnx, "Cos", ops::make_cos},
      {kOnnx, "Sin", ops::make_sin},
      {kOnnx, "Relu", ops::make_relu},
      {kOnnx, "Pow", ops::make_pow},
      {kOnnx, "Min", ops::make_min},
      {kOnnx, "Max", ops::make_max},
      {kOnnx, "Gelu", ops::make_onnx_gelu},
      {kMs, "Gelu", ops::make_ms_gelu},
      {kMs, "FastGelu", ops::make_fast_gelu},
      {kMs, "BiasGelu", ops::make_bias_gelu},
      {kMs, "QuickGelu", ops::make_quick_gelu},
      {kOnnx, "ConstantOfShape", ops::make_constant_of_shape},
      {kOnnx, "Range", ops::make_range},
      {kOnnx, "Expand", ops::make_expand},
      {kOnnx, "Tile", ops::make_tile},
      {kOnnx, "Split", ops::make_split},
      {kOnnx, "ReduceMean", ops::make_reduce_mean},
      {kOnnx, "ReduceMax", ops::make_reduce_max},
      {kOnnx, "Softmax", ops::make_softmax},
      // torch.onnx.export / Optimum decoders
      {kOnnx, "Trilu", ops::make_trilu},
      {kOnnx, "ScatterND", ops::make_scatter_nd},
      {kOnnx, "GatherElements", ops::make_gather_elements},
      {kOnnx, "CumSum", ops::make_cum_sum},
      {kOnnx, "Einsum", ops::make_einsum},
      {kOnnx, "DynamicQuantizeLinear", ops::make_dynamic_quantize_linear},
      {kOnnx, "MatMulInteger", ops::make_matmul_integer},
  };
  const std::string_view d = domain == "ai.onnx" ? kOnnx : std::string_view(domain);
  for (const Entry& e : kTable)
    if (e.domain == d && e.op_type == op_type) return e.make;
  return nullptr;
}

}  // namespace nbits::graph
