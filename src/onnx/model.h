// A read-only view of an ONNX model: what the graph room binds to.
// Produced by load_model() from a memory-mapped model.onnx (+ external data).
// Initializer bytes point into the mapped file(s) whenever the file stores them
// raw; typed repeated fields (float_data, int64_data, ...) are decoded once into
// storage owned by the Model. Nothing here executes anything.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/mapped_file.h"

namespace nbits::onnx {

// TensorProto.DataType values.
enum class DataType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUint32 = 12,
  kUint64 = 13,
  kBfloat16 = 16,
  kUint4 = 21,
  kInt4 = 22,
};

const char* data_type_name(DataType t);              // "float", "uint8", ...
int64_t data_type_bits(DataType t);                  // 32, 8, 4, ...; 0 if unknown
int64_t tensor_bytes(DataType t, int64_t elements);  // packed size (int4: ceil(n/2))

struct Tensor {
  std::string name;
  DataType dtype = DataType::kUndefined;
  std::vector<int64_t> dims;
  // Little-endian, row-major, exactly tensor_bytes(dtype, numel). Raw bytes are viewed in
  // place. A misaligned inline raw_data of a 2/4/8-byte type (protobuf puts it anywhere) is
  // copied into Model::owned when it is small (under kMisalignedViewBytes); a large one stays a
  // view (an fp32 embedding: 545 MB that a copy would keep resident, while the file mapping
  // holds only the rows a Gather reads): aligned() is false for it, data<T>() must not be used
  // on it (the session copies it for the ops that read it typed: graph/session_build.cc).
  std::span<const uint8_t> bytes;
  bool external = false;  // bytes come from an external data file
  int64_t numel() const;
  bool aligned() const;  // bytes.data() is aligned to the element size
  template <typename T>
  const T* data() const {
    return reinterpret_cast<const T*>(bytes.data());
  }
  static constexpr size_t kMisalignedViewBytes = size_t{1} << 20;
};

enum class AttrType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kInt = 2,
  kString = 3,
  kTensor = 4,
  kGraph = 5,
  kFloats = 6,
  kInts = 7,
  kStrings = 8,
};

struct Graph;

struct Attribute {
  std::string name;
  AttrType type = AttrType::kUndefined;
  float f = 0.0f;
  int64_t i = 0;
  std::string s;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::optional<Tensor> t;         // for kTensor (e.g. Constant's value)
  std::shared_ptr<const Graph> g;  // for kGraph (If's branches), nested at most 4 deep
};

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;                // "" or "ai.onnx" = default domain; "com.microsoft"
  std::vector<std::string> inputs;   // "" = optional input left out
  std::vector<std::string> outputs;  // "" = optional output not produced
  std::vector<Attribute> attributes;

  const Attribute* attr(std::string_view attr_name) const;  // nullptr if absent
  // Typed getters: return the default when absent; throw nbits::Error naming the
  // node and attribute when present with the wrong type.
  int64_t attr_int(std::string_view attr_name, int64_t def) const;
  float attr_float(std::string_view attr_name, float def) const;
  std::string attr_string(std::string_view attr_name, const std::string& def) const;
  std::vector<int64_t> attr_ints(std::string_view attr_name) const;  // empty if absent
  // Throws "node 'X' (OpType): missing required attribute 'K'" when absent.
  int64_t attr_int_required(std::string_view attr_name) const;
  bool has_input(size_t i) const { return i < inputs.size() && !inputs[i].empty(); }
  bool has_output(size_t i) const { return i < outputs.size() && !outputs[i].empty(); }
};

struct Dim {
  int64_t value = -1;  // -1 when symbolic or unknown
  std::string param;   // symbolic name, e.g. "batch_size"
};

struct ValueInfo {
  std::string name;
  DataType elem_type = DataType::kUndefined;
  std::vector<Dim> dims;
  bool has_shape = false;
};

struct OpsetImport {
  std::string domain;
  int64_t version = 0;
};

struct Graph {
  std::string name;
  std::vector<Node> nodes;
  std::vector<Tensor> initializers;
  std::vector<ValueInfo> inputs;
  std::vector<ValueInfo> outputs;
  std::vector<ValueInfo> value_infos;

  const Tensor* initializer(std::string_view name) const;  // nullptr if absent
};

// Move-only: Tensor::bytes may point into `owned`, so a copy would dangle.
struct Model {
  Model() = default;
  Model(Model&&) = default;
  Model& operator=(Model&&) = default;
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  int64_t ir_version = 0;
  std::string producer_name;
  std::string producer_version;
  std::vector<OpsetImport> opset_imports;
  Graph graph;
  std::string path;  // model.onnx path as given

  // Backing storage (keep the model alive while any Tensor::bytes is used).
  std::shared_ptr<MappedFile> file;
  std::map<std::string, std::shared_ptr<MappedFile>> external_files;  // by location
  std::deque<std::vector<uint8_t>> owned;                             // decoded typed fields

  // Initializers whose bytes are made on first use (a GGUF tensor converted to MatMulNBits'
  // layout when the session builds its reader, so a load never holds every converted copy at
  // once): their Tensor::bytes are empty until materialize(name) runs the producer, which must
  // give exactly tensor_bytes(dtype, numel) bytes (kept in `owned`). Whatever reads an
  // initializer's bytes calls materialize() first; dims and dtype are there from the start.
  std::map<std::string, std::function<std::vector<uint8_t>()>, std::less<>> deferred;
  void materialize(std::string_view name);  // nothing when `name` is not deferred

  int64_t opset(std::string_view domain) const;  // 0 if not imported
};

// Loads and validates structure (not semantics). Every length, offset and count
// is checked against the file; errors throw nbits::Error with one line naming
// the file and the problem. External data is resolved relative to the model's
// directory and must stay inside that directory.
Model load_model(const std::string& path);

// Same, from bytes in memory (used by the fuzzer and tests); the bytes are copied
// into the Model, so the caller's buffer may go. External data, if referenced, is
// resolved against base_dir ("" = refuse external data). Errors name "model".
Model parse_model(std::span<const uint8_t> bytes, const std::string& base_dir = "");

}  // namespace nbits::onnx
