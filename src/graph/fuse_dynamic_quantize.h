// onnxruntime quantize_dynamic's int8 MatMul (transformers.js model_int8.onnx / model_quantized.onnx /
// model_uint8.onnx): a load-time rewrite onto the packed int8 weight path.
#pragma once

#include <vector>

#include "onnx/model.h"

namespace nbits::graph {

// y = Mul(Cast<float>(MatMulInteger(DynamicQuantizeLinear(x).{y, zero_point}, W, W_zp)),
//         Mul(DynamicQuantizeLinear(x).scale, W_scale))
// with a constant 2-D int8/uint8 W [K, N], a constant W_zp and a float W_scale each a scalar or
// per column ([N]; either operand order of both Muls) becomes MatMulDequantized(x, W, scale, zp)
// (block 32 along K: W_scale and W_zp repeated per block, initializers added to the model),
// which packs W once as MatMulNBits bits=8 and runs at accuracy level 4: int8 activations per
// (row, block of 32) symmetric instead of ONNX Runtime's one uint8 scale per tensor, so the
// product is dequant(W) x a with less activation rounding than ORT's, not bit for bit ORT's.
// The intermediate values must have no other reader; a DynamicQuantizeLinear left without
// readers is dropped. Returns the number of MatMulIntegers fused.
int fuse_dynamic_quantize_matmul(std::vector<onnx::Node>& nodes, onnx::Model& model);

}  // namespace nbits::graph
