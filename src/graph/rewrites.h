// Load-time graph preparation: structural validation, topological order and
// the graph rewrites the session applies before resolving ops.
#pragma once

#include <set>
#include <vector>

#include "graph/session.h"
#include "onnx/model.h"

namespace nbits::graph {

// Checks every node input / graph output is produced exactly once (by a node,
// an initializer or a graph input) and returns the nodes in topological order.
// Nameless nodes get a descriptive name. Throws nbits::Error naming the node.
std::vector<onnx::Node> sorted_nodes(const onnx::Graph& g);

// ORT's MatMulNBits bias fusion: a MatMulNBits whose only consumer is an Add of
// a 1-D constant float [N] takes that constant as its bias input (index 5); the
// Add disappears. Returns the number of fusions.
int fuse_matmul_nbits_bias(std::vector<onnx::Node>& nodes, const onnx::Graph& g);

// MatMul(A, Transpose(C)), C a constant 2-D float initializer that MatMul packs at load (a tied
// lm_head): the MatMul reads C with nbits_b_nk = 1 and the Transpose goes, so no transposed copy
// is folded at load. Only when every reader of the Transpose is such a MatMul. Returns the MatMuls
// rewritten.
int read_transposed_weights(std::vector<onnx::Node>& nodes, const onnx::Graph& g,
                            const SessionOptions& options);

// The op type and domain of the fused SwiGLU node below.
inline constexpr const char* kSiluMulOp = "SiluMul";
inline constexpr const char* kInternalDomain = "nbits.internal";

// SwiGLU: m = Mul(Mul(g, Sigmoid(g)), u) (either operand order) becomes one
// SiluMul(g, u) node when g and u come from MatMulNBits (or MatMul / MatMulDequantized
// with a 2-D constant B) nodes with the same input and N (so equal shapes) and the
// intermediate values have no other reader. Bitwise the same result, two passes over memory instead of five.
// Returns the number of fusions.
int fuse_silu_mul(std::vector<onnx::Node>& nodes, const onnx::Graph& g);

// MatMulNBits nodes reading the same A with the same K, bits, block_size and accuracy_level
// (q/k/v of exports that keep them apart; the MLP's gate and up) become one node that
// quantizes A once and forks the pool once for all of them (kernels/matmul_group.h):
//  * gate and up whose outputs only a SiluMul reads (fuse_silu_mul ran first): one
//    MatMulNBitsSiluMul writing the SiluMul's output, silu(gate) * up in the epilogue;
//  * the others: one MatMulNBitsGroup with the nodes' outputs, in order.
// Inputs: A, then per weight B, scales, zero_points, bias ("" when absent); attributes K, bits,
// block_size, accuracy_level, N (ints, one per weight) and names (the original nodes). Left alone:
// nodes with g_idx or block mins, non-constant B/scales/zero_points/bias, a prepacked layout, or an
// output that is a graph output (the lm_head keeps its last-position path). Members read only A
// and initializers, so the group sits at its first member's place. Returns the number of nodes
// the groups replaced (a SiluMul counted with its gate and up).
inline constexpr const char* kMatMulNBitsGroupOp = "MatMulNBitsGroup";
inline constexpr const char* kMatMulNBitsSiluMulOp = "MatMulNBitsSiluMul";
int fuse_matmul_nbits_groups(std::vector<onnx::Node>& nodes, const onnx::Graph& g);

// use_qdq exports: MatMul(A, DequantizeLinear(W, scale[, zero_point])) with a
// constant 2-D W (4 or 8 bits) dequantized block-wise along axis 0 becomes one
// MatMulDequantized(A, W, scale[, zero_point]) node (packed like MatMulNBits)
// when the DequantizeLinear output has no other reader. Returns the count.
inline constexpr const char* kMatMulDequantizedOp = "MatMulDequantized";
int fuse_dequantize_matmul(std::vector<onnx::Node>& nodes, const onnx::Graph& g);

// The session computes floats in fp32 (graph::compute_dtype), except the fp16 KV
// cache GroupQueryAttention reads (past) and writes (present) in place, which
// stays as declared. Any other graph input or output declared fp16/bf16 keeps
// that storage dtype at the boundary: each such
// input X gets a StorageCast X -> "X/nbits_f32" in front that every reader now
// reads, and each such output Y is produced as "Y/nbits_f32" (what readers
// inside the graph use) and stored by a StorageCast at the end. Returns the
// number of conversions added.
inline constexpr const char* kStorageCastOp = "StorageCast";
int lower_float_boundaries(std::vector<onnx::Node>& nodes, const onnx::Graph& g);

// The builder's MultiHeadAttention layout (present = Concat(past, new), repeat_kv
// chains, attention_bias = causal mask of attention_mask) becomes
// GroupQueryAttention writing one shared KV buffer in place, fed by an internal
// AttentionMaskLengths node; nodes only the old path read are dropped. An fp32
// or fp16 cache keeps its dtype (GroupQueryAttention reads and writes fp16 rows
// itself); a bf16 one becomes fp32.
// Applied only when every piece matches (else the graph is left as it was);
// meant for batch 1 without padding (GroupQueryAttention's mask semantics).
// Returns the number of layers fused.
int fuse_mha_into_gqa(std::vector<onnx::Node>& nodes, onnx::Graph& g);

// Plain-op exports (Optimum / torch.onnx.export; graph/fuse_optimum.cc). RMSNorm
// written out as Pow/ReduceMean/Add/Sqrt/Div/Mul (x [Cast] * gamma, gamma 1-D
// constant or Add(w, 1)) becomes SimplifiedLayerNormalization, and with the
// residual Add(a, b) in front SkipSimplifiedLayerNormalization (output 3: the sum).
// Returns the number of norms fused.
int fuse_rms_norm(std::vector<onnx::Node>& nodes, const onnx::Graph& g);

// Plain-op attention (q/k/v Reshape/Transpose, rotate_half rotary from
// position_ids x inv_freq, present = Concat(past, new), repeat_kv, Softmax(QK^T *
// scale + causal mask of attention_mask) V) becomes GroupQueryAttention with
// do_rotary (cos/sin caches of max_positions rows computed at load from inv_freq,
// added to the model) writing one shared KV buffer in place; dead nodes dropped.
// q/k/v MatMulNBits of one input and quantization are packed into one (GroupQueryAttention
// reads packed QKV). Also partial rotary (Concat(rotary(Slice), Slice)), per-head norms on
// either side of the q/k transpose (Qwen3, Gemma-3), one cos/sin table pair per distinct
// inv_freq (Gemma-3's local and global bases), and a sliding-window mask (Greater(k, q - W):
// local_window_size W). All layers
// or none (else the graph is left as it was); batch 1 without padding, as
// fuse_mha_into_gqa; positions beyond max_positions are refused by GroupQueryAttention.
// Returns the number of layers fused.
int fuse_optimum_attention(std::vector<onnx::Node>& nodes, onnx::Model& model, int64_t max_positions = 32768);

// A projection (MatMulNBits without zero points, or MatMul with a constant 2-D B) read only by
// Slices along its last axis that tile [0, N) (bounds constant or shape arithmetic on N:
// Phi-3's packed qkv_proj and gate_up_proj, torch.chunk) becomes one projection per slice, over
// the rows (columns of B) of its slice, each writing that slice's output. The parts are what
// fuse_silu_mul and fuse_optimum_attention (which packs q/k/v again) match. Returns the number
// of projections split.
int split_sliced_projections(std::vector<onnx::Node>& nodes, onnx::Model& model);

// GELU, tanh approximation, written out (HF gelu_pytorch_tanh: 0.5 * x * (1 + tanh(sqrt(2/pi) *
// (x + 0.044715 x^3))), x^3 as Mul(x, Mul(x, x)) or Pow(x, 3)) becomes com.microsoft FastGelu(x)
// (the op the GGUF Gemma builder emits). Returns the number of fusions.
int fuse_gelu_tanh(std::vector<onnx::Node>& nodes, const onnx::Graph& g);

// Sets the declared dtype of the KV cache graph inputs (past, GroupQueryAttention
// inputs 3-4) and outputs (present, outputs 1-2) that GroupQueryAttention nodes
// read and write directly to `dtype` (kFloat or kFloat16, or kInt8: the int8 rows of
// kernels/attention.h, head_size codes + a 4-byte scale, so a static last dim grows by 4).
// ShortConv's slots (the same places) change with them: it keeps fp32 in the slot's bytes.
// Returns how many changed.
int set_kv_cache_dtype(const std::vector<onnx::Node>& nodes, onnx::Graph& g, onnx::DataType dtype);

// fp16/bf16 initializers that stay in half precision at load instead of being
// widened to fp32: 2-D ones read only as the right operand (B) of ai.onnx MatMul
// nodes, which pack them into half-precision panels (kernels/float_x16_matmul.h),
// or by a Transpose whose only readers are Gathers' data (the tied embedding of
// fp16 exports: the transposed copy folds at load in half, Gather widens rows).
std::set<std::string> half_matmul_weights(const std::vector<onnx::Node>& nodes, const onnx::Graph& g);

}  // namespace nbits::graph
