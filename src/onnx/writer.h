// Builds an ONNX model in memory and writes it, inline or with external data laid
// out like onnx_ir (`ir.save(..., external_data=..., size_threshold_bytes=...)`).
//
//   onnx::ModelWriter w;
//   w.add_opset("", 21); w.add_opset("com.microsoft", 1);
//   w.add_input("input_ids", DataType::kInt64, {dim_param("batch_size"), dim_param("sequence_length")});
//   w.add_initializer("W", DataType::kUint8, {N, blocks, 16}, std::move(bytes));
//   w.add_node("MatMulNBits", "com.microsoft", "mm0", {"x", "W", "S"}, {"y"},
//              {int_attr("K", K), int_attr("N", N), int_attr("bits", 4), int_attr("block_size", 32)});
//   w.save("out/model.onnx", /*external_data=*/true);
//
// Initializer bytes are moved in (or viewed, for spans) and streamed to disk:
// saving never holds a second copy of them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "onnx/chunks.h"
#include "onnx/model.h"

namespace nbits::onnx {

// Dims for add_input/add_output: dim_value(64) fixed, dim_param("batch_size") symbolic.
inline Dim dim_value(int64_t v) {
  Dim d;
  d.value = v;
  return d;
}
inline Dim dim_param(std::string name) {
  Dim d;
  d.param = std::move(name);
  return d;
}

// One node attribute as the writer stores it (see the *_attr helpers).
struct WriterAttr {
  std::string name;
  AttrType type = AttrType::kUndefined;
  int64_t i = 0;
  float f = 0.0f;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  DataType tensor_dtype = DataType::kUndefined;  // kTensor
  std::vector<int64_t> tensor_dims;
  std::vector<uint8_t> tensor_bytes;
};

WriterAttr int_attr(std::string name, int64_t v);
WriterAttr float_attr(std::string name, float v);
WriterAttr string_attr(std::string name, std::string v);
WriterAttr ints_attr(std::string name, std::vector<int64_t> v);
WriterAttr floats_attr(std::string name, std::vector<float> v);
WriterAttr strings_attr(std::string name, std::vector<std::string> v);
// A TensorProto attribute (e.g. Constant's `value`), always stored inline as raw_data.
WriterAttr tensor_attr(std::string name, DataType dtype, std::vector<int64_t> dims,
                       std::vector<uint8_t> bytes);

class ModelWriter {
 public:
  ModelWriter();  // ir_version 8, producer "nbits", no opsets

  void set_ir_version(int64_t v) { ir_version_ = v; }
  void set_producer(std::string name, std::string version);
  void set_graph_name(std::string name) { graph_name_ = std::move(name); }
  void add_opset(std::string domain, int64_t version);

  // Graph inputs/outputs: dims from dim_param("batch_size") (symbolic) and dim_value(64).
  void add_input(std::string name, DataType dtype, std::vector<Dim> dims);
  void add_output(std::string name, DataType dtype, std::vector<Dim> dims);

  // bytes.size() must equal tensor_bytes(dtype, product(dims)) (checked).
  void add_initializer(std::string name, DataType dtype, std::vector<int64_t> dims,
                       std::vector<uint8_t> bytes);
  // Views bytes without copying: they must stay alive until serialize()/save() returns.
  void add_initializer(std::string name, DataType dtype, std::vector<int64_t> dims,
                       std::span<const uint8_t> bytes);
  // A tensor that points at existing external data (no bytes written by save();
  // nothing is checked: used to build test models, including broken ones).
  void add_external_initializer(std::string name, DataType dtype, std::vector<int64_t> dims,
                                std::string location, int64_t offset, int64_t length);

  void add_node(std::string op_type, std::string domain, std::string name, std::vector<std::string> inputs,
                std::vector<std::string> outputs, std::vector<WriterAttr> attributes = {});

  size_t num_initializers() const { return inits_.size(); }

  // The whole model with every initializer inline.
  std::vector<uint8_t> serialize() const;

  // Writes onnx_path; with external_data, initializers of at least `threshold`
  // bytes go to <onnx_path>.data (sorted by size, those > 1 MiB aligned to 64 KiB),
  // referenced by location/offset/length. Throws nbits::Error on I/O failure.
  void save(const std::string& onnx_path, bool external_data = false, size_t threshold = 0) const;

 private:
  struct Init {
    std::string name;
    DataType dtype = DataType::kUndefined;
    std::vector<int64_t> dims;
    std::vector<uint8_t> owned;
    std::span<const uint8_t> bytes;
    bool ext_preset = false;  // add_external_initializer
    std::string ext_location;
    int64_t ext_offset = 0, ext_length = 0;
  };
  struct Value {
    std::string name;
    DataType dtype;
    std::vector<Dim> dims;
  };
  struct NodeDef {
    std::string op_type, domain, name;
    std::vector<std::string> inputs, outputs;
    std::vector<WriterAttr> attributes;
  };
  struct ExternalPlace {
    std::string location;
    uint64_t offset = 0;
  };
  void check_new_initializer(const std::string& name, DataType dtype, const std::vector<int64_t>& dims,
                             size_t nbytes) const;
  // places[i] set => initializer i is external at that place.
  Chunks build(const std::vector<const ExternalPlace*>& places) const;

  int64_t ir_version_ = 8;
  std::string producer_name_ = "nbits", producer_version_;
  std::string graph_name_ = "main_graph";
  std::vector<OpsetImport> opsets_;
  std::vector<Value> inputs_, outputs_;
  std::vector<Init> inits_;
  std::vector<NodeDef> nodes_;
  std::unordered_set<std::string> init_names_;
};

// A writer holding everything in m (initializers viewed, not copied: m must
// outlive the writer). Attributes of types the reader does not keep are dropped.
ModelWriter writer_from_model(const Model& m);

}  // namespace nbits::onnx
