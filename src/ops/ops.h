// Factories of every op family (one .cc per family); find_op maps names to them.
#pragma once

#include <memory>

#include "graph/op.h"

namespace nbits::ops {

using graph::Op;
using graph::OpBuild;

// matmul_nbits.cc
std::unique_ptr<Op> make_matmul_nbits(OpBuild& b);
std::unique_ptr<Op> make_matmul_dequantized(OpBuild& b);  // graph/rewrites.h fuse_dequantize_matmul
// Grouped MatMulNBits (graph/rewrites.h fuse_matmul_nbits_groups).
std::unique_ptr<Op> make_matmul_nbits_group(OpBuild& b);
std::unique_ptr<Op> make_matmul_nbits_silu_mul(OpBuild& b);
// The routed feed-forward of a mixture-of-experts layer (ops/moe.cc).
std::unique_ptr<Op> make_mixture_of_experts(OpBuild& b);
std::unique_ptr<Op> make_ort_moe(OpBuild& b);
std::unique_ptr<Op> make_ort_qmoe(OpBuild& b);
// MatMul(A, B) with B a constant float [K, N] (element i: at(i); b_nk: stored [N, K]) re-quantized
// at load to `bits` (8 or 4) symmetric blocks of 32 along K (SessionOptions::requantize_float).
std::unique_ptr<Op> make_requantized_matmul(OpBuild& b, int64_t K, int64_t N,
                                            float (*at)(const void*, int64_t), const void* data, int bits,
                                            bool b_nk = false);
// True when MatMul packs a constant B of this dtype at load (then it can read B stored [N, K],
// the attribute nbits_b_nk = 1 that graph/rewrites.h read_transposed_weights sets).
bool matmul_packs_constant_b(const graph::SessionOptions& options, graph::DType b);
// if.cc (constant branches)
std::unique_ptr<Op> make_if(OpBuild& b);
// dequantize_linear.cc
std::unique_ptr<Op> make_dequantize_linear(OpBuild& b);
// matmul.cc
std::unique_ptr<Op> make_matmul(OpBuild& b);
// group_query_attention.cc
std::unique_ptr<Op> make_group_query_attention(OpBuild& b);
// short_conv.cc: LFM2's gated short convolution, its state in the layer's KV cache slot
std::unique_ptr<Op> make_short_conv(OpBuild& b);
// position_scale.cc: a per-position factor on q (the Llama 4 / mistral3 attention temperature)
std::unique_ptr<Op> make_position_scale(OpBuild& b);
// rotary_embedding.cc, multi_head_attention.cc (MHA layouts of builder exports)
std::unique_ptr<Op> make_rotary_embedding(OpBuild& b);
std::unique_ptr<Op> make_multi_head_attention(OpBuild& b);
// norms.cc
std::unique_ptr<Op> make_simplified_layer_norm(OpBuild& b);
std::unique_ptr<Op> make_skip_simplified_layer_norm(OpBuild& b);
// gather.cc
std::unique_ptr<Op> make_gather(OpBuild& b);
std::unique_ptr<Op> make_gather_block_quantized(OpBuild& b);
// elementwise.cc
std::unique_ptr<Op> make_add(OpBuild& b);
std::unique_ptr<Op> make_sub(OpBuild& b);
std::unique_ptr<Op> make_mul(OpBuild& b);
std::unique_ptr<Op> make_div(OpBuild& b);
std::unique_ptr<Op> make_sigmoid(OpBuild& b);
std::unique_ptr<Op> make_silu_mul(OpBuild& b);  // the fused SwiGLU (graph/rewrites.h fuse_silu_mul)
// GroupQueryAttention's lengths from attention_mask (graph/rewrites.h fuse_mha_into_gqa).
std::unique_ptr<Op> make_attention_mask_lengths(OpBuild& b);
std::unique_ptr<Op> make_cast(OpBuild& b);
// Cast to the storage dtype as given (graph/rewrites.h lower_float_boundaries: fp16 graph I/O).
std::unique_ptr<Op> make_storage_cast(OpBuild& b);
// shape_ops.cc
std::unique_ptr<Op> make_identity(OpBuild& b);
std::unique_ptr<Op> make_reshape(OpBuild& b);
std::unique_ptr<Op> make_squeeze(OpBuild& b);
std::unique_ptr<Op> make_flatten(OpBuild& b);
std::unique_ptr<Op> make_unsqueeze(OpBuild& b);
std::unique_ptr<Op> make_transpose(OpBuild& b);
std::unique_ptr<Op> make_shape(OpBuild& b);
std::unique_ptr<Op> make_constant(OpBuild& b);
std::unique_ptr<Op> make_concat(OpBuild& b);
std::unique_ptr<Op> make_slice(OpBuild& b);
// norms.cc (mean/variance norms)
std::unique_ptr<Op> make_layer_norm(OpBuild& b);
std::unique_ptr<Op> make_skip_layer_norm(OpBuild& b);
// compare.cc
std::unique_ptr<Op> make_equal(OpBuild& b);
std::unique_ptr<Op> make_less(OpBuild& b);
std::unique_ptr<Op> make_greater(OpBuild& b);
std::unique_ptr<Op> make_less_or_equal(OpBuild& b);
std::unique_ptr<Op> make_greater_or_equal(OpBuild& b);
std::unique_ptr<Op> make_and(OpBuild& b);
std::unique_ptr<Op> make_or(OpBuild& b);
std::unique_ptr<Op> make_xor(OpBuild& b);
std::unique_ptr<Op> make_not(OpBuild& b);
std::unique_ptr<Op> make_is_nan(OpBuild& b);
std::unique_ptr<Op> make_is_inf(OpBuild& b);
std::unique_ptr<Op> make_where(OpBuild& b);
// unary.cc
std::unique_ptr<Op> make_neg(OpBuild& b);
std::unique_ptr<Op> make_sqrt(OpBuild& b);
std::unique_ptr<Op> make_reciprocal(OpBuild& b);
std::unique_ptr<Op> make_tanh(OpBuild& b);
std::unique_ptr<Op> make_erf(OpBuild& b);
std::unique_ptr<Op> make_exp(OpBuild& b);
std::unique_ptr<Op> make_log(OpBuild& b);
std::unique_ptr<Op> make_abs(OpBuild& b);
std::unique_ptr<Op> make_cos(OpBuild& b);
std::unique_ptr<Op> make_sin(OpBuild& b);
std::unique_ptr<Op> make_relu(OpBuild& b);
std::unique_ptr<Op> make_pow(OpBuild& b);
std::unique_ptr<Op> make_min(OpBuild& b);
std::unique_ptr<Op> make_max(OpBuild& b);
std::unique_ptr<Op> make_onnx_gelu(OpBuild& b);  // ai.onnx Gelu (opset 20)
std::unique_ptr<Op> make_ms_gelu(OpBuild& b);    // com.microsoft Gelu
std::unique_ptr<Op> make_fast_gelu(OpBuild& b);
std::unique_ptr<Op> make_bias_gelu(OpBuild& b);
std::unique_ptr<Op> make_quick_gelu(OpBuild& b);
// generate.cc
std::unique_ptr<Op> make_constant_of_shape(OpBuild& b);
std::unique_ptr<Op> make_range(OpBuild& b);
std::unique_ptr<Op> make_expand(OpBuild& b);
std::unique_ptr<Op> make_tile(OpBuild& b);
std::unique_ptr<Op> make_split(OpBuild& b);
// reduce.cc
std::unique_ptr<Op> make_reduce_sum(OpBuild& b);
std::unique_ptr<Op> make_reduce_mean(OpBuild& b);
std::unique_ptr<Op> make_reduce_max(OpBuild& b);
std::unique_ptr<Op> make_softmax(OpBuild& b);
// scatter_gather.cc, einsum.cc (torch.onnx.export decoders)
std::unique_ptr<Op> make_trilu(OpBuild& b);
std::unique_ptr<Op> make_scatter_nd(OpBuild& b);
std::unique_ptr<Op> make_gather_elements(OpBuild& b);
std::unique_ptr<Op> make_cum_sum(OpBuild& b);
std::unique_ptr<Op> make_einsum(OpBuild& b);
// quantize_dynamic.cc, matmul_integer.cc (quantize_dynamic int8 decoders)
std::unique_ptr<Op> make_dynamic_quantize_linear(OpBuild& b);
std::unique_ptr<Op> make_matmul_integer(OpBuild& b);

}  // namespace nbits::ops
