// The structure of an ONNX model: ModelProto (ir_version, opsets, the one graph), GraphProto
// (nodes, initializers, inputs/outputs), NodeProto and AttributeProto (subgraphs bounded in
// depth), ValueInfoProto with its tensor type and shape. Tensors: parse_tensor.cc.
#include <unordered_set>

#include "base/error.h"
#include "onnx/parser.h"

namespace nbits::onnx::detail {

void Parser::parse_model(std::span<const uint8_t> bytes) {
  if (bytes.empty()) src_.fail("empty file (not an ONNX model)");
  bool have_graph = false;
  Reader r(src_, bytes);
  Field f;
  while (r.next(f)) {
    switch (f.number) {
      case 1:
        m_.ir_version = wire::as_int64(src_, f, "ModelProto.ir_version");
        break;
      case 2:
        m_.producer_name = str(f, "ModelProto.producer_name");
        break;
      case 3:
        m_.producer_version = str(f, "ModelProto.producer_version");
        break;
      case 7:
        expect_len(f, "ModelProto.graph");
        if (have_graph) src_.fail_at(f.start, "model has more than one graph field");
        have_graph = true;
        parse_graph(f.bytes, m_.graph, 0);
        break;
      case 8:
        m_.opset_imports.push_back(parse_opset(f));
        break;
      default:
        break;
    }
  }
  if (!have_graph) src_.fail("not an ONNX model (no graph)");
  if (m_.ir_version <= 0) src_.fail("not an ONNX model (ir_version " + std::to_string(m_.ir_version) + ")");
}

OpsetImport Parser::parse_opset(const Field& outer) {
  expect_len(outer, "ModelProto.opset_import");
  OpsetImport o;
  Reader r(src_, outer.bytes);
  Field f;
  while (r.next(f)) {
    if (f.number == 1) o.domain = str(f, "OperatorSetIdProto.domain");
    if (f.number == 2) o.version = wire::as_int64(src_, f, "OperatorSetIdProto.version");
  }
  return o;
}

void Parser::parse_graph(std::span<const uint8_t> bytes, Graph& g, int depth) {
  Reader r(src_, bytes);
  Field f;
  std::unordered_set<std::string> init_names;
  while (r.next(f)) {
    switch (f.number) {
      case 1:
        expect_len(f, "GraphProto.node");
        g.nodes.push_back(parse_node(f.bytes, depth));
        break;
      case 2:
        g.name = str(f, "GraphProto.name");
        break;
      case 5: {
        expect_len(f, "GraphProto.initializer");
        Tensor t = parse_tensor(f.bytes, "initializer");
        if (t.name.empty()) src_.fail_at(f.start, "initializer without a name");
        if (!init_names.insert(t.name).second)
          src_.fail("duplicate initializer '" + wire::printable(t.name) + "'");
        g.initializers.push_back(std::move(t));
        break;
      }
      case 11:
        g.inputs.push_back(parse_value_info(f));
        break;
      case 12:
        g.outputs.push_back(parse_value_info(f));
        break;
      case 13:
        g.value_infos.push_back(parse_value_info(f));
        break;
      case 15:
        src_.fail_at(f.start, "sparse initializers are not supported");
      default:
        break;
    }
  }
}

Node Parser::parse_node(std::span<const uint8_t> bytes, int depth) {
  Node n;
  Reader r(src_, bytes);
  Field f;
  std::vector<Field> attrs;
  while (r.next(f)) {
    switch (f.number) {
      case 1:
        n.inputs.push_back(str(f, "NodeProto.input"));
        break;
      case 2:
        n.outputs.push_back(str(f, "NodeProto.output"));
        break;
      case 3:
        n.name = str(f, "NodeProto.name");
        break;
      case 4:
        n.op_type = str(f, "NodeProto.op_type");
        break;
      case 5:
        expect_len(f, "NodeProto.attribute");
        attrs.push_back(f);
        break;
      case 7:
        n.domain = str(f, "NodeProto.domain");
        break;
      default:
        break;
    }
  }
  if (n.op_type.empty()) src_.fail("node '" + wire::printable(n.name) + "' has no op_type");
  n.attributes.reserve(attrs.size());
  for (const Field& a : attrs) n.attributes.push_back(parse_attribute(n, a, depth));
  return n;
}

Attribute Parser::parse_attribute(const Node& n, const Field& outer, int depth) {
  Attribute a;
  int32_t declared = 0;
  std::optional<Field> graph_field;
  bool has_f = false, has_i = false, has_s = false, has_g = false, has_floats = false, has_ints = false,
       has_strings = false;
  std::optional<Field> tensor_field;
  Reader r(src_, outer.bytes);
  Field f;
  while (r.next(f)) {
    switch (f.number) {
      case 1:
        a.name = str(f, "AttributeProto.name");
        break;
      case 2:
        a.f = wire::as_float(src_, f, "AttributeProto.f");
        has_f = true;
        break;
      case 3:
        a.i = wire::as_int64(src_, f, "AttributeProto.i");
        has_i = true;
        break;
      case 4:
        a.s = str(f, "AttributeProto.s");
        has_s = true;
        break;
      case 5:
        expect_len(f, "AttributeProto.t");
        tensor_field = f;
        break;
      case 6:
        expect_len(f, "AttributeProto.g");
        has_g = true;
        graph_field = f;
        break;
      case 7:
        wire::append_floats(src_, f, "AttributeProto.floats", a.floats);
        has_floats = true;
        break;
      case 8:
        wire::append_int64s(src_, f, "AttributeProto.ints", a.ints);
        has_ints = true;
        break;
      case 9:
        a.strings.push_back(str(f, "AttributeProto.strings"));
        has_strings = true;
        break;
      case 20:
        declared = wire::as_int32(src_, f, "AttributeProto.type");
        break;
      default:
        break;
    }
  }
  const std::string where = "node '" + wire::printable(n.name) + "' (" + wire::printable(n.op_type) +
                            ") attribute '" + wire::printable(a.name) + "'";
  if (a.name.empty())
    src_.fail_at(outer.start, "node '" + wire::printable(n.name) + "' has an attribute without a name");
  if (declared == 0) {  // IR < 3 writers may omit the type: infer it from the field present
    if (tensor_field)
      declared = 4;
    else if (has_g)
      declared = 5;
    else if (has_f)
      declared = 1;
    else if (has_i)
      declared = 2;
    else if (has_s)
      declared = 3;
    else if (has_floats)
      declared = 6;
    else if (has_ints)
      declared = 7;
    else if (has_strings)
      declared = 8;
  }
  if (declared < 0 || declared > 8) {
    // TENSORS, GRAPHS, SPARSE_TENSOR(S), TYPE_PROTO(S): kept as undefined, contents ignored.
    a.type = AttrType::kUndefined;
    return a;
  }
  a.type = static_cast<AttrType>(declared);
  if (a.type == AttrType::kTensor) {
    if (!tensor_field) src_.fail(where + " has type TENSOR but no tensor");
    a.t = parse_tensor(tensor_field->bytes, where);
  }
  if (a.type == AttrType::kGraph) {
    if (!graph_field) src_.fail(where + " has type GRAPH but no graph");
    if (depth + 1 > kMaxGraphDepth)
      src_.fail(where + ": subgraphs nested more than " + std::to_string(kMaxGraphDepth) + " deep");
    auto sub = std::make_shared<Graph>();
    parse_graph(graph_field->bytes, *sub, depth + 1);
    a.g = std::move(sub);
  }
  return a;
}

ValueInfo Parser::parse_value_info(const Field& outer) {
  expect_len(outer, "ValueInfoProto");
  ValueInfo v;
  Reader r(src_, outer.bytes);
  Field f;
  while (r.next(f)) {
    if (f.number == 1) v.name = str(f, "ValueInfoProto.name");
    if (f.number != 2) continue;
    expect_len(f, "ValueInfoProto.type");
    Reader tr(src_, f.bytes);
    Field tf;
    while (tr.next(tf)) {
      if (tf.number != 1) continue;  // only tensor_type
      expect_len(tf, "TypeProto.tensor_type");
      Reader rr(src_, tf.bytes);
      Field ef;
      while (rr.next(ef)) {
        if (ef.number == 1)
          v.elem_type = static_cast<DataType>(wire::as_int32(src_, ef, "TypeProto.Tensor.elem_type"));
        if (ef.number == 2) {
          expect_len(ef, "TypeProto.Tensor.shape");
          v.has_shape = true;
          parse_shape(ef.bytes, v.dims);
        }
      }
    }
  }
  return v;
}

void Parser::parse_shape(std::span<const uint8_t> bytes, std::vector<Dim>& dims) {
  Reader r(src_, bytes);
  Field f;
  while (r.next(f)) {
    if (f.number != 1) continue;
    expect_len(f, "TensorShapeProto.dim");
    Dim d;
    Reader dr(src_, f.bytes);
    Field df;
    while (dr.next(df)) {
      if (df.number == 1) d.value = wire::as_int64(src_, df, "Dimension.dim_value");
      if (df.number == 2) d.param = str(df, "Dimension.dim_param");
    }
    if (!d.param.empty()) d.value = -1;
    dims.push_back(std::move(d));
  }
}

}  // namespace nbits::onnx::detail
