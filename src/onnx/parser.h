// Internal to the ONNX model parser: the ModelProto reader over the protobuf wire reader
// (onnx/wire.h), one instance per model. Its work is split by job:
//   parse_graph.cc    ModelProto, GraphProto, NodeProto, AttributeProto, ValueInfoProto
//   parse_tensor.cc   TensorProto: dims, dtype, raw / typed data, alignment
//   external_data.cc  TensorProto.external_data: location checks, files mapped once
// Field numbers: onnx/onnx.proto (../shared/docs/onnx-genai-spec.md section 4.6).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "onnx/model.h"
#include "onnx/wire.h"

namespace nbits::onnx::detail {

class Parser {
 public:
  Parser(Model& m, std::span<const uint8_t> bytes, std::string label, std::string base_dir)
      : m_(m), base_dir_(std::move(base_dir)) {
    src_.label = std::move(label);
    src_.base = bytes.data();
    src_.size = bytes.size();
  }

  void parse_model(std::span<const uint8_t> bytes);

 private:
  using Field = wire::Field;
  using Reader = wire::Reader;

  void expect_len(const Field& f, const char* what) { wire::expect_type(src_, f, wire::kLen, what); }
  std::string str(const Field& f, const char* what) {
    expect_len(f, what);
    return std::string(f.str());
  }

  static constexpr int kMaxGraphDepth = 4;  // subgraphs (If branches) inside subgraphs

  // parse_graph.cc
  OpsetImport parse_opset(const Field& outer);
  void parse_graph(std::span<const uint8_t> bytes, Graph& g, int depth);
  Node parse_node(std::span<const uint8_t> bytes, int depth);
  Attribute parse_attribute(const Node& n, const Field& outer, int depth);
  ValueInfo parse_value_info(const Field& outer);
  void parse_shape(std::span<const uint8_t> bytes, std::vector<Dim>& dims);

  // parse_tensor.cc
  Tensor parse_tensor(std::span<const uint8_t> bytes, const std::string& context);
  // Typed tensors are read through T* by the executor: copy (rarely) misaligned raw bytes,
  // unless they are large (Tensor::kMisalignedViewBytes: the session copies those on demand).
  std::span<const uint8_t> aligned(DataType dt, std::span<const uint8_t> b);
  std::span<const uint8_t> decode_typed(DataType dt, const std::vector<Field>& fields, int64_t numel,
                                        int64_t nbytes, const std::string& who, const std::string& desc);

  // external_data.cc
  struct ExternalRef {
    std::string location;
    std::string offset, length;
    bool has_location = false, has_offset = false, has_length = false;
  };
  void parse_external_entry(const Field& outer, ExternalRef& ext);
  std::span<const uint8_t> resolve_external(const ExternalRef& ext, int64_t nbytes, const std::string& who,
                                            const std::string& desc);

  Model& m_;
  std::string base_dir_;
  wire::Source src_;
};

}  // namespace nbits::onnx::detail
