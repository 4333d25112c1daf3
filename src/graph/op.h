// The op interface between the session (graph/) and the op families (ops/).
// An Op is built once per node at load (attributes and constant inputs
// validated, weights packed), then each run the session calls infer() (output
// shapes from input shapes, and from the values of small shape tensors) and
// run() (compute into outputs whose memory the session assigned).
//
// An Op is immutable once built: infer() and run() are const and keep nothing
// between calls (what run() needs from infer() it recomputes from the args;
// scratch is per thread), so sessions forked from one load (Session::fork) run
// the same ops on different threads at once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "graph/session.h"
#include "graph/tensor.h"
#include "onnx/model.h"

namespace nbits::graph {

// Inputs and outputs of one node during a run. Absent optional inputs and
// outputs not produced are nullptr.
struct OpArgs {
  const Tensor* const* in = nullptr;
  size_t n_in = 0;
  Tensor* const* out = nullptr;
  size_t n_out = 0;
  // Compute only the last row of each sequence (the lm_head of a step whose other
  // logits nobody reads); set only for ops whose last_position_only() is true.
  bool last_position = false;
  // Attend each position of the step as a one-position decode step at that position would
  // (the same kernel, key split and summation order), so every row of a multi-position step
  // carries the bits of one-token decode: a speculative verify step (llm::Generator::verify).
  bool positions_as_decode = false;

  const Tensor* input(size_t i) const { return i < n_in ? in[i] : nullptr; }
  Tensor* output(size_t i) const { return i < n_out ? out[i] : nullptr; }
};

struct RunContext {
  ThreadPool& pool;
};

// What an op factory sees at load: the node, the dtype of each input (nullopt
// when absent), the constant inputs (initializers or folded values), options.
// It must fill out_types for every output the node produces.
struct OpBuild {
  const onnx::Node& node;
  std::vector<std::optional<DType>> in_types;
  std::vector<const Tensor*> constants;  // non-null where input i is a constant
  std::vector<DType> out_types;          // one per node output (filled by the factory)
  const SessionOptions& options;
  // Drops the whole file pages inside [p, p + n) when they belong to the mapped
  // model (a hint: a later read faults them back in); no-op elsewhere.
  std::function<void(const void* p, size_t n)> release_pages = {};
  // The mapped model file that holds [p, p + n), or null (owned memory): an op that
  // reads rows of a large constant at run copies them with MappedFile::read (the
  // file outlives every op built from it).
  std::function<const MappedFile*(const void* p, size_t n)> mapping = {};
  // The session's pool, for work at load (packing); null in contexts without one.
  ThreadPool* pool = nullptr;
  // The model's opset for the node's domain (0 when not imported): ops whose
  // semantics changed between opsets (Softmax at 13) read it.
  int64_t opset = 0;

  bool has_input(size_t i) const { return i < in_types.size() && in_types[i].has_value(); }
  DType type(size_t i) const;                                // throws naming the node if input i is absent
  const Tensor& constant(size_t i, const char* what) const;  // throws if input i is not a constant
  const Tensor* constant_or_null(size_t i) const { return i < constants.size() ? constants[i] : nullptr; }
  std::string where() const;  // "node 'X' (OpType)"
  // Throws "<where>: <parts>" unless cond holds.
  template <typename... Args>
  void check(bool cond, Args&&... parts) const {
    if (!cond) fail(where(), ": ", std::forward<Args>(parts)...);
  }
  void require_type(size_t i, std::initializer_list<DType> allowed, const char* what) const;
  void set_outputs(DType t);  // every output gets dtype t
};

class Op {
 public:
  virtual ~Op() = default;
  // Sets the shape of every produced output (dtype already fixed at load).
  virtual void infer(const OpArgs& a) const = 0;
  // Computes the outputs; their memory holds at least bytes() each.
  virtual void run(const OpArgs& a, RunContext& ctx) const = 0;
  // >= 0: output 0 is a view of that input's data (Reshape, Identity, ...).
  virtual int alias_input() const { return -1; }
  // Non-null (after infer with these args): output i is a view of memory the op
  // owns (If choosing between constant branches); run() then writes nothing there.
  virtual const void* output_view(const OpArgs& /*a*/, size_t /*i*/) const { return nullptr; }
  // Kernel path a run with these args takes, for the profile ("" when not interesting).
  virtual const char* kernel_name(const OpArgs& /*a*/) const { return ""; }
  // True when the op honours OpArgs::last_position (MatMul-like ops: the lm_head).
  virtual bool last_position_only() const { return false; }
  // MatMulNBits reports its packed weight here (a group node: one per weight), and
  // packed_weight_bytes() the bytes of packed data.
  virtual std::vector<MatMulNBitsInfo> nbits_info() const { return {}; }
  virtual size_t packed_weight_bytes() const { return 0; }
  // Of packed_weight_bytes(): what one decode step reads on average (a mixture-of-experts op
  // reads only the experts a token chose).
  virtual size_t streamed_weight_bytes() const { return packed_weight_bytes(); }
  // False when run() never reads constant input i because the op copied what it
  // needs at load (MatMulNBits packs B, scales, zero points, bias): the session
  // then lets the file pages behind that initializer go.
  virtual bool reads_constant_at_run(size_t /*input*/) const { return true; }
  // True when run() reads constant input i through the model file's mapping; false when it
  // reads a mapped table only by copy (a Gather's pread of embedding rows): the pages that
  // other readers touched at load (a tied lm_head packing the same table) may then go.
  virtual bool maps_constant_at_run(size_t input) const { return reads_constant_at_run(input); }
  // True when run() honours Tensor::rows on input (or output) i.
  virtual bool takes_row_pointers(bool /*output*/, size_t /*i*/) const { return false; }
};

using OpFactory = std::unique_ptr<Op> (*)(OpBuild& b);

// The op for (domain, op_type), or nullptr when unsupported.
OpFactory find_op(const std::string& domain, const std::string& op_type);

// Maps an ONNX dtype to a runtime dtype; nullopt when the runtime has none.
std::optional<DType> to_dtype(onnx::DataType t);

// Shape of an ONNX dims vector (throws naming `what` when rank > kMaxRank).
Shape to_shape(const std::vector<int64_t>& dims, const std::string& what);

}  // namespace nbits::graph
