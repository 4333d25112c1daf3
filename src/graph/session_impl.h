// Internal to graph/session*.cc: the one Session implementation and the records it keeps
// per value, per plan node and per arena buffer. Its work is split by job:
//   session.cc          loading entry points, fork, binding inputs/outputs, lookups
//   session_build.cc    the load: rewrites, ops built, constants added and folded
//   session_pages.cc    letting go of initializer pages/storage once packed; mapped-weight advice
//   session_memory.cc   the arena: buffer lifetimes planned at load, buffers that grow
//   session_run.cc      the run loop
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/mapped_file.h"
#include "base/thread_pool.h"
#include "graph/op.h"
#include "graph/session.h"
#include "onnx/model.h"

namespace nbits::graph::detail {

enum class Kind { kInput, kConstant, kRuntime };

struct Value {
  std::string name;
  Kind kind = Kind::kRuntime;
  Tensor t;
  int producer = -1;  // plan index (runtime values)
  int root = -1;      // value owning the memory (alias views point to their root)
  int last_use = -1;  // plan index of the last reader of the root's group
  int buffer = -1;
  bool graph_output = false;
  bool bound = false;
  Tensor binding;
  std::vector<int64_t> declared;  // graph inputs/outputs: declared dims (-1 = symbolic)
  bool has_declared = false;
  bool misaligned = false;  // a constant viewing large misaligned raw_data (onnx/model.h)
};

struct PlanNode {
  std::string name, op_type;
  std::shared_ptr<const Op> op;  // shared by every fork of the session
  std::vector<int> in, out;
  // Per session:
  std::vector<const Tensor*> in_ptrs;
  std::vector<Tensor*> out_ptrs;
  bool last_position = false;  // OpArgs::last_position
  int64_t calls = 0;
  double ms = 0.0;
  const char* kernel = "";  // kernel path of the last profiled run (static strings)
};

// What every session forked from one load shares, read-only once built: the
// options, the worker pool, the model (its file mappings back constants) and the
// constants folded or realigned at load.
struct Shared {
  explicit Shared(const SessionOptions& o) : options(o), pool(o.threads) {}
  SessionOptions options;
  ThreadPool pool;
  onnx::Model model;
  std::deque<std::vector<uint8_t>> storage;
};

// One reusable memory block of the arena; grows, never shrinks. The first sizing is
// exact; a later growth takes at least half again the old capacity, so a tensor that
// grows with the context (present = Concat(past, new), attention scores, masks on the
// general path) is reallocated O(log T) times over a conversation, not at every step.
struct Buffer {
  void* p = nullptr;
  size_t cap = 0;
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { release(); }
  void release();
  void* ensure(size_t bytes);  // at least `bytes`, 64-byte aligned; contents not kept
};

class SessionImpl final : public Session {
 public:
  SessionImpl(const std::string& path, const SessionOptions& options)
      : shared_(std::make_shared<Shared>(options)) {
    shared_->model = onnx::load_model(path);
    build();
  }
  SessionImpl(onnx::Model&& model, const SessionOptions& options)
      : shared_(std::make_shared<Shared>(options)) {
    shared_->model = std::move(model);
    build();
  }

  std::unique_ptr<Session> fork() const override;

  std::vector<std::string> input_names() const override { return names(inputs_); }
  std::vector<std::string> output_names() const override { return names(outputs_); }
  DType input_dtype(std::string_view name) const override {
    return values_[find(inputs_, name, "graph input")].t.dtype;
  }
  DType output_dtype(std::string_view name) const override {
    return values_[find(outputs_, name, "graph output")].t.dtype;
  }
  std::string output_producer(std::string_view name) const override;

  void bind_input(std::string_view name, const Tensor& t) override;
  void bind_output(std::string_view name, const Tensor& t) override;
  bool takes_row_pointers(std::string_view name) const override;
  void run() override;
  const Tensor& output(std::string_view name) const override {
    return values_[find(outputs_, name, "graph output")].t;
  }
  void set_last_position_only(std::string_view logits_name, bool on) override;
  void set_positions_as_decode(bool on) override { positions_as_decode_ = on; }

  std::vector<MatMulNBitsInfo> matmul_nbits_info() const override;
  std::vector<ProfileEntry> profile() const override;
  void reset_profile() override;

  size_t weight_bytes() const override { return weight_bytes_; }
  size_t packed_weight_bytes() const override { return packed_weight_bytes_; }
  size_t streamed_weight_bytes() const override { return streamed_weight_bytes_; }
  size_t mapped_weight_bytes() const override { return mapped_weight_bytes_; }
  size_t released_bytes() const override { return released_bytes_; }
  size_t arena_bytes() const override;

 private:
  // A fork: the ops, constants and buffer plan of `o`, its own bindings and buffers.
  SessionImpl(const SessionImpl& o, int /*fork*/);

  // session.cc
  void link_plan();  // points each node's argument lists at this session's values
  std::vector<std::string> names(const std::vector<int>& ids) const;
  int find(const std::vector<int>& ids, std::string_view name, const char* what) const;
  void check_declared(const Value& v, const Shape& s, const char* who) const;
  // session_build.cc
  void build();
  int value_id(const std::string& name);
  int add_constant(const onnx::Tensor& init);
  void align_constant(int value);  // copies a misaligned constant's bytes (Value::misaligned)
  void fold(const onnx::Node& node, std::unique_ptr<Op> op, const std::vector<int>& in,
            const std::vector<int>& out);
  // session_pages.cc
  const MappedFile* mapping_of(const void* p, size_t n) const;
  const MappedFile* mapping_of(const Tensor& t) const { return mapping_of(t.data, t.bytes()); }
  void consumed_at_load(int value, bool read_at_run, bool maps_at_run);
  bool release_owned(const void* p, size_t n);
  bool last_reader_of_owned(const onnx::Node& node, const void* p, size_t n) const;
  void release_folded(int value);
  void release_merged_ranges();
  void advise_mapped_constants();
  // session_memory.cc
  void plan_buffers();

  std::shared_ptr<Shared> shared_;
  std::vector<Value> values_;
  std::map<std::string, int> ids_;
  std::vector<int> inputs_, outputs_;
  std::vector<PlanNode> plan_;
  std::vector<std::unique_ptr<Buffer>> buffers_;
  bool positions_as_decode_ = false;  // OpArgs::positions_as_decode
  // Used while building only:
  std::map<std::string, int> loads_left_;  // constant -> node inputs not yet built
  std::set<std::string> keep_half_;        // fp16/bf16 initializers not widened (graph/rewrites.h)
  std::vector<bool> read_at_run_;          // by value id: some op reads it at run time
  std::vector<bool> mapped_at_run_;        // by value id: some op reads it through the mapping at run
  struct Range {
    const MappedFile* file;
    const uint8_t* p;
    size_t n;
  };
  std::vector<Range> released_ranges_;  // initializers let go (merged at the end of load)
  size_t weight_bytes_ = 0, packed_weight_bytes_ = 0, streamed_weight_bytes_ = 0, mapped_weight_bytes_ = 0,
         released_bytes_ = 0;
  size_t trimmed_owned_bytes_ = 0;  // owned bytes freed since the heap was last trimmed
};

}  // namespace nbits::graph::detail
