// Factories of every op family (one .cc per family); find_op maps names to them.
#pragma once

#include <memory>

#include "graph/op.h"

namespace nbits::ops {

using graph::Op;
using graph::OpBuild;

// matmul_nbits.cc
std::unique_ptr<Op> make_matmul_nbits(OpBuild& b);
// matmul.cc
std::unique_ptr<Op> make_matmul(OpBuild& b);
// group_query_attention.cc
std::unique_ptr<Op> make_group_query_attention(OpBuild& b);
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
std::unique_ptr<Op> make_silu_mul(OpBuild& b);  // the fused SwiGLU (graph/plan.h fuse_silu_mul)
std::unique_ptr<Op> make_cast(OpBuild& b);
// shape_ops.cc
std::unique_ptr<Op> make_identity(OpBuild& b);
std::unique_ptr<Op> make_reshape(OpBuild& b);
std::unique_ptr<Op> make_squeeze(OpBuild& b);
std::unique_ptr<Op> make_unsqueeze(OpBuild& b);
std::unique_ptr<Op> make_transpose(OpBuild& b);
std::unique_ptr<Op> make_shape(OpBuild& b);
std::unique_ptr<Op> make_reduce_sum(OpBuild& b);
std::unique_ptr<Op> make_constant(OpBuild& b);
std::unique_ptr<Op> make_concat(OpBuild& b);
std::unique_ptr<Op> make_slice(OpBuild& b);

}  // namespace nbits::ops
