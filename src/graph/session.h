// Session: a loaded model ready to run steps. Built once from an ONNX file:
// ops resolved (unsupported ops/dtypes refused here, naming them), weights
// packed once, an execution plan with tensor lifetimes and one arena.
// After the first run with a given input shape, run() allocates nothing.
//
// fork() makes another session over the same load: the ops, packed weights,
// constants and worker pool are shared (immutable), the bindings, arena and
// profile are its own. Forks may run on different threads at once (their
// parallel sections take turns on the shared pool); one session is used by one
// thread at a time.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/tensor.h"

namespace nbits::onnx {
struct Model;
}

namespace nbits::graph {

struct SessionOptions {
  int threads = 1;                    // 0 = all hardware threads
  std::optional<int> accuracy_level;  // override every MatMulNBits' accuracy_level
  bool profile = false;               // collect per-node timings
  bool fp16_scales = false;  // pack MatMulNBits scales as fp16 where kernels can (kernels::PackOptions)
  // 0, or 8 / 4: re-quantize every constant float (fp32/fp16/bf16) MatMul weight at load into
  // symmetric blocks of 32 of that many bits (the float lm_head of onnx-community q4 exports).
  int requantize_float = 0;
  // KV cache dtype where GroupQueryAttention reads and writes it in place: as the
  // model declares, or fp32 / fp16 whatever it declares (the graph's past/present
  // inputs and outputs then report that dtype). kQ8: int8 rows, per (batch, kv head, position)
  // head_size codes and an fp32 scale (symmetric, max|x| / 127; kernels/attention.h), quantized
  // once as written: the inputs and outputs report int8 [B, Nkv, L, head_size + 4]. Only where
  // GroupQueryAttention owns the cache; the session refuses q8 for any other model.
  enum class KvCache { kModel, kF32, kF16, kQ8 };
  KvCache kv_cache = KvCache::kModel;
  // Rows of the rotary tables the plain-op attention fusion computes at load (graph/rewrites.h
  // fuse_optimum_attention): the model's context (config.json max_position_embeddings, set by
  // the loaders); 0 = 32768. A position beyond them is refused by GroupQueryAttention.
  int64_t max_positions = 0;
  // MatMulNBits nodes reading one activation (q/k/v; gate/up, with the SiluMul after them) run as
  // one group node: A quantized once, one fork/join (graph/rewrites.h fuse_matmul_nbits_groups).
  // The environment variable NBITS_FUSE_MATMUL_GROUPS=0 turns it off as well.
  bool fuse_matmul_groups = true;
  // Called as the load builds (and packs) its nodes, with the fraction done (0..1]; may be empty.
  std::function<void(double)> progress;
};

// "model" | "f32" | "f16" | "q8" (the --kv-cache flag); throws nbits::Error naming the value otherwise.
SessionOptions::KvCache parse_kv_cache(const std::string& s);

// One line of the profile: per node (or per op type when aggregated).
struct ProfileEntry {
  std::string name;  // node name, or op type
  std::string op_type;
  std::string kernel;  // kernel path taken (MatMulNBits: micro-kernel name)
  int64_t calls = 0;
  double total_ms = 0.0;
};

// What `nbits inspect` and the profile show for each MatMulNBits node.
struct MatMulNBitsInfo {
  std::string node;
  int64_t K = 0, N = 0;
  int bits = 0, block_size = 0, accuracy_level = 0;
  bool zero_points = false, bias = false;
  std::string kernel;          // the kernel of one row (decode), chosen at load
  std::string prefill_kernel;  // the kernel of several rows (prefill steps)
  size_t packed_bytes = 0;
  std::string group;  // the fused group node running this weight (MatMulNBitsGroup), "" when alone
};

// True for the op types that update their KV cache slot in place, past and present being one
// buffer: GroupQueryAttention, and ShortConv (LFM2's convolution state, ops/short_conv.cc).
inline bool updates_cache_in_place(std::string_view op_type) {
  return op_type == "GroupQueryAttention" || op_type == "ShortConv";
}

class Session {
 public:
  // path: model.onnx (external data next to it). Throws nbits::Error.
  static std::unique_ptr<Session> load(const std::string& path, const SessionOptions& options = {});
  // From a model built in memory (GGUF files: gguf/model_builder.h); the session keeps it.
  static std::unique_ptr<Session> load(onnx::Model&& model, const SessionOptions& options = {});
  virtual ~Session() = default;

  // Another session over this load (see the top). The load stays alive while any fork does.
  virtual std::unique_ptr<Session> fork() const = 0;

  virtual std::vector<std::string> input_names() const = 0;
  virtual std::vector<std::string> output_names() const = 0;
  // Storage dtype of a graph input / output as declared (fp16 KV caches and
  // logits stay fp16 at the boundary). Throws for an unknown name.
  virtual DType input_dtype(std::string_view name) const = 0;
  virtual DType output_dtype(std::string_view name) const = 0;
  // Op type of the node that computes a graph output ("" when none does), e.g.
  // "GroupQueryAttention" for a KV cache it can update in place (updates_cache_in_place).
  virtual std::string output_producer(std::string_view name) const = 0;

  // Binds caller-owned memory to a graph input for the next run()s. The
  // tensor's shape must match the graph input's declared rank/dtype.
  virtual void bind_input(std::string_view name, const Tensor& t) = 0;
  // Binds caller-owned memory to an output: the op producing it writes there
  // (e.g. present KV == past KV, one shared buffer). Shape must be what the
  // graph produces for the bound inputs, else run() throws.
  virtual void bind_output(std::string_view name, const Tensor& t) = 0;
  // True when every node reading graph input `name` (or producing graph output `name`, and
  // every node reading it) takes a tensor whose batch rows lie apart (Tensor::rows): such a
  // tensor may then be bound there. False for unknown names.
  virtual bool takes_row_pointers(std::string_view /*name*/) const { return false; }
  // Runs every node once. Throws nbits::Error on shape mismatch.
  virtual void run() = 0;
  // An output of the last run (bound or arena memory, valid until the next run).
  virtual const Tensor& output(std::string_view name) const = 0;

  // Only compute logits for the last position (lm_head on one row). The
  // output named `logits_name` then has shape [B, 1, V].
  virtual void set_last_position_only(std::string_view logits_name, bool on) = 0;
  // Every position of the next run()s attended as its own one-position decode step would be
  // (OpArgs::positions_as_decode): the rows of a multi-token step then equal one-token decode
  // bit for bit, at the cost of the tile kernel's sharing of K/V reads across positions.
  virtual void set_positions_as_decode(bool on) = 0;

  virtual std::vector<MatMulNBitsInfo> matmul_nbits_info() const = 0;
  virtual std::vector<ProfileEntry> profile() const = 0;  // per node, in plan order
  virtual void reset_profile() = 0;
  virtual size_t weight_bytes() const = 0;  // packed weights + other initializers in use
  // Of weight_bytes(): the weights ops packed at load (MatMulNBits, half-precision
  // MatMul), all of which a decode step streams.
  virtual size_t packed_weight_bytes() const { return 0; }
  // Of packed_weight_bytes(): what a decode step reads on average (mixture-of-experts layers
  // count their k chosen experts of n).
  virtual size_t streamed_weight_bytes() const { return packed_weight_bytes(); }
  virtual size_t arena_bytes() const = 0;
  // Of weight_bytes(): initializers read straight from the memory-mapped model
  // file at run time (e.g. an fp32 embedding table); only the pages touched
  // become resident.
  virtual size_t mapped_weight_bytes() const { return 0; }
  // Initializer bytes whose file pages were let go after packing at load.
  virtual size_t released_bytes() const { return 0; }
};

}  // namespace nbits::graph
