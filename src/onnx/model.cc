// ModelProto parser over the wire reader. Field numbers: onnx/onnx.proto (see
// ../shared/docs/onnx-genai-spec.md section 4.6 for the subset that matters).
#include "onnx/model.h"

#include <cstring>
#include <limits>
#include <unordered_set>

#include "base/error.h"
#include "onnx/wire.h"

namespace nbits::onnx {

using wire::Field;
using wire::Reader;

const char* data_type_name(DataType t) {
  switch (t) {
    case DataType::kUndefined:
      return "undefined";
    case DataType::kFloat:
      return "float";
    case DataType::kUint8:
      return "uint8";
    case DataType::kInt8:
      return "int8";
    case DataType::kUint16:
      return "uint16";
    case DataType::kInt16:
      return "int16";
    case DataType::kInt32:
      return "int32";
    case DataType::kInt64:
      return "int64";
    case DataType::kString:
      return "string";
    case DataType::kBool:
      return "bool";
    case DataType::kFloat16:
      return "float16";
    case DataType::kDouble:
      return "double";
    case DataType::kUint32:
      return "uint32";
    case DataType::kUint64:
      return "uint64";
    case DataType::kBfloat16:
      return "bfloat16";
    case DataType::kUint4:
      return "uint4";
    case DataType::kInt4:
      return "int4";
  }
  return "unknown";
}

int64_t data_type_bits(DataType t) {
  switch (t) {
    case DataType::kFloat:
      return 32;
    case DataType::kUint8:
      return 8;
    case DataType::kInt8:
      return 8;
    case DataType::kUint16:
      return 16;
    case DataType::kInt16:
      return 16;
    case DataType::kInt32:
      return 32;
    case DataType::kInt64:
      return 64;
    case DataType::kBool:
      return 8;
    case DataType::kFloat16:
      return 16;
    case DataType::kDouble:
      return 64;
    case DataType::kUint32:
      return 32;
    case DataType::kUint64:
      return 64;
    case DataType::kBfloat16:
      return 16;
    case DataType::kUint4:
      return 4;
    case DataType::kInt4:
      return 4;
    default:
      return 0;
  }
}

int64_t tensor_bytes(DataType t, int64_t elements) {
  const int64_t bits = data_type_bits(t);
  if (bits == 0 || elements < 0) return 0;
  return bits >= 8 ? elements * (bits / 8) : (elements + (8 / bits) - 1) / (8 / bits);
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

const Attribute* Node::attr(std::string_view attr_name) const {
  for (const auto& a : attributes)
    if (a.name == attr_name) return &a;
  return nullptr;
}

namespace {
[[noreturn]] void wrong_attr_type(const Node& n, const Attribute& a, const char* want) {
  fail("node '", wire::printable(n.name), "' (", wire::printable(n.op_type), "): attribute '",
       wire::printable(a.name), "' should be ", want, " (attribute type ", static_cast<int>(a.type), ")");
}
}  // namespace

int64_t Node::attr_int(std::string_view attr_name, int64_t def) const {
  const Attribute* a = attr(attr_name);
  if (a == nullptr) return def;
  if (a->type != AttrType::kInt) wrong_attr_type(*this, *a, "an int");
  return a->i;
}

float Node::attr_float(std::string_view attr_name, float def) const {
  const Attribute* a = attr(attr_name);
  if (a == nullptr) return def;
  if (a->type != AttrType::kFloat) wrong_attr_type(*this, *a, "a float");
  return a->f;
}

std::string Node::attr_string(std::string_view attr_name, const std::string& def) const {
  const Attribute* a = attr(attr_name);
  if (a == nullptr) return def;
  if (a->type != AttrType::kString) wrong_attr_type(*this, *a, "a string");
  return a->s;
}

std::vector<int64_t> Node::attr_ints(std::string_view attr_name) const {
  const Attribute* a = attr(attr_name);
  if (a == nullptr) return {};
  if (a->type != AttrType::kInts) wrong_attr_type(*this, *a, "a list of ints");
  return a->ints;
}

int64_t Node::attr_int_required(std::string_view attr_name) const {
  if (attr(attr_name) == nullptr)
    fail("node '", wire::printable(name), "' (", wire::printable(op_type), "): missing required attribute '",
         wire::printable(attr_name), "'");
  return attr_int(attr_name, 0);
}

const Tensor* Graph::initializer(std::string_view init_name) const {
  for (const auto& t : initializers)
    if (t.name == init_name) return &t;
  return nullptr;
}

int64_t Model::opset(std::string_view domain) const {
  const bool default_domain = domain.empty() || domain == "ai.onnx";
  for (const auto& o : opset_imports) {
    const bool d = o.domain.empty() || o.domain == "ai.onnx";
    if (default_domain ? d : o.domain == domain) return o.version;
  }
  return 0;
}

namespace {

constexpr int32_t kDataLocationExternal = 1;

bool valid_location(std::string_view loc) {
  if (loc.empty() || loc.front() == '/') return false;
  if (loc.find('\\') != std::string_view::npos || loc.find('\0') != std::string_view::npos) return false;
  size_t start = 0;
  while (start <= loc.size()) {
    size_t end = loc.find('/', start);
    if (end == std::string_view::npos) end = loc.size();
    const std::string_view part = loc.substr(start, end - start);
    if (part == "..") return false;
    start = end + 1;
  }
  return loc.back() != '/';
}

// Strict unsigned decimal; false on anything else or overflow.
bool parse_decimal(std::string_view s, int64_t& out) {
  if (s.empty() || s.size() > 19) return false;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, c - '0', &v)) return false;
  }
  out = v;
  return true;
}

std::string shape_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i != 0) s += ',';
    s += std::to_string(dims[i]);
  }
  s += ']';
  return s;
}

class Parser {
 public:
  Parser(Model& m, std::span<const uint8_t> bytes, std::string label, std::string base_dir)
      : m_(m), base_dir_(std::move(base_dir)) {
    src_.label = std::move(label);
    src_.base = bytes.data();
    src_.size = bytes.size();
  }

  void parse_model(std::span<const uint8_t> bytes) {
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

 private:
  void expect_len(const Field& f, const char* what) { wire::expect_type(src_, f, wire::kLen, what); }
  std::string str(const Field& f, const char* what) {
    expect_len(f, what);
    return std::string(f.str());
  }

  OpsetImport parse_opset(const Field& outer) {
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

  static constexpr int kMaxGraphDepth = 4;  // subgraphs (If branches) inside subgraphs

  void parse_graph(std::span<const uint8_t> bytes, Graph& g, int depth) {
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

  Node parse_node(std::span<const uint8_t> bytes, int depth) {
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

  Attribute parse_attribute(const Node& n, const Field& outer, int depth) {
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

  ValueInfo parse_value_info(const Field& outer) {
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

  void parse_shape(std::span<const uint8_t> bytes, std::vector<Dim>& dims) {
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

  // --- tensors ---------------------------------------------------------------

  struct ExternalRef {
    std::string location;
    std::string offset, length;
    bool has_location = false, has_offset = false, has_length = false;
  };

  Tensor parse_tensor(std::span<const uint8_t> bytes, const std::string& context) {
    Tensor t;
    int32_t dtype = 0;
    int32_t data_location = 0;
    std::optional<std::span<const uint8_t>> raw;
    std::vector<Field> typed;
    ExternalRef ext;
    bool has_ext = false, has_strings = false, has_segment = false;
    Reader r(src_, bytes);
    Field f;
    while (r.next(f)) {
      switch (f.number) {
        case 1:
          wire::append_int64s(src_, f, "TensorProto.dims", t.dims);
          break;
        case 2:
          dtype = wire::as_int32(src_, f, "TensorProto.data_type");
          break;
        case 3:
          has_segment = true;
          break;
        case 4:
        case 5:
        case 7:
        case 10:
        case 11:
          typed.push_back(f);
          break;
        case 6:
          has_strings = true;
          break;
        case 8:
          t.name = str(f, "TensorProto.name");
          break;
        case 9:
          expect_len(f, "TensorProto.raw_data");
          raw = f.bytes;
          break;
        case 13:
          parse_external_entry(f, ext);
          has_ext = true;
          break;
        case 14:
          data_location = wire::as_int32(src_, f, "TensorProto.data_location");
          break;
        default:
          break;
      }
    }
    const std::string who = t.name.empty() ? context : "tensor '" + wire::printable(t.name) + "'";
    auto bad = [&](const std::string& msg) { src_.fail(who + " " + msg); };
    if (has_segment) bad("is segmented (unsupported)");
    t.dtype = static_cast<DataType>(dtype);
    if (dtype == static_cast<int32_t>(DataType::kString) || has_strings) bad("holds strings (unsupported)");
    if (dtype == 0) bad("has no data_type");
    if (data_type_bits(t.dtype) == 0) bad("has unknown data_type " + std::to_string(dtype));
    // numel with overflow checks; keep it small enough that byte counts fit int64.
    int64_t numel = 1;
    for (int64_t d : t.dims) {
      if (d < 0) bad("has negative dimension " + std::to_string(d) + " in " + shape_string(t.dims));
      if (__builtin_mul_overflow(numel, d, &numel) || numel > (int64_t{1} << 56))
        bad("dims " + shape_string(t.dims) + " overflow the element count");
    }
    const int64_t nbytes = tensor_bytes(t.dtype, numel);
    const std::string desc = std::string(data_type_name(t.dtype)) + " " + shape_string(t.dims) + " (" +
                             std::to_string(nbytes) + " bytes)";

    if (data_location == kDataLocationExternal) {
      if (raw || !typed.empty()) bad("has data_location EXTERNAL and inline data");
      if (!has_ext) bad("has data_location EXTERNAL but no external_data entries");
      t.bytes = resolve_external(ext, nbytes, who, desc);
      t.external = true;
    } else if (data_location != 0) {
      bad("has invalid data_location " + std::to_string(data_location));
    } else if (has_ext) {
      bad("has external_data entries but data_location is not EXTERNAL");
    } else if (raw) {
      if (!typed.empty()) bad("has both raw_data and typed data fields");
      if (static_cast<uint64_t>(raw->size()) != static_cast<uint64_t>(nbytes))
        bad("raw_data has " + std::to_string(raw->size()) + " bytes, expected " + desc);
      t.bytes = *raw;
    } else if (!typed.empty()) {
      t.bytes = decode_typed(t.dtype, typed, numel, nbytes, who, desc);
    } else if (nbytes != 0) {
      bad("has no data, expected " + desc);
    }
    t.bytes = aligned(t.dtype, t.bytes);
    return t;
  }

  // Typed tensors are read through T* by the executor: copy (rarely) misaligned raw bytes.
  std::span<const uint8_t> aligned(DataType dt, std::span<const uint8_t> b) {
    const int64_t bits = data_type_bits(dt);
    const uintptr_t align = bits >= 16 ? static_cast<uintptr_t>(bits / 8) : 1;
    if (b.empty() || reinterpret_cast<uintptr_t>(b.data()) % align == 0) return b;
    auto& v = m_.owned.emplace_back(b.begin(), b.end());
    return {v.data(), v.size()};
  }

  void parse_external_entry(const Field& outer, ExternalRef& ext) {
    expect_len(outer, "TensorProto.external_data");
    std::string_view key, value;
    Reader r(src_, outer.bytes);
    Field f;
    while (r.next(f)) {
      if (f.number == 1) {
        expect_len(f, "StringStringEntryProto.key");
        key = f.str();
      } else if (f.number == 2) {
        expect_len(f, "StringStringEntryProto.value");
        value = f.str();
      }
    }
    if (key == "location") {
      ext.location = std::string(value);
      ext.has_location = true;
    } else if (key == "offset") {
      ext.offset = std::string(value);
      ext.has_offset = true;
    } else if (key == "length") {
      ext.length = std::string(value);
      ext.has_length = true;
    }
  }

  std::span<const uint8_t> resolve_external(const ExternalRef& ext, int64_t nbytes, const std::string& who,
                                            const std::string& desc) {
    auto bad = [&](const std::string& msg) { src_.fail(who + " " + msg); };
    if (!ext.has_location) bad("external data has no location");
    const std::string loc = wire::printable(ext.location);
    if (!valid_location(ext.location))
      bad("external data location '" + loc + "' must be a relative path inside the model's directory");
    if (base_dir_.empty())
      bad("references external data '" + loc + "' but the model was not loaded from a file");
    int64_t offset = 0, length = -1;
    if (ext.has_offset && !parse_decimal(ext.offset, offset))
      bad("external data offset '" + wire::printable(ext.offset) + "' is not a non-negative integer");
    if (ext.has_length && !parse_decimal(ext.length, length))
      bad("external data length '" + wire::printable(ext.length) + "' is not a non-negative integer");
    auto& file = m_.external_files[ext.location];
    if (!file) {
      const std::string path = base_dir_ + "/" + ext.location;
      try {
        file = std::make_shared<MappedFile>(path);
      } catch (const Error& e) {
        m_.external_files.erase(ext.location);
        bad(std::string("external data: ") + e.what());
      }
    }
    const int64_t size = static_cast<int64_t>(file->size());
    if (length < 0) {
      if (offset > size)
        bad("external data offset " + std::to_string(offset) + " is past the end of " + loc + " (" +
            std::to_string(size) + " bytes)");
      length = size - offset;
    }
    if (offset > size || length > size - offset)
      bad("external data offset " + std::to_string(offset) + " + length " + std::to_string(length) +
          " is past the end of " + loc + " (" + std::to_string(size) + " bytes)");
    if (length != nbytes) bad("external data length " + std::to_string(length) + " does not match " + desc);
    return file->bytes().subspan(static_cast<size_t>(offset), static_cast<size_t>(length));
  }

  std::span<const uint8_t> decode_typed(DataType dt, const std::vector<Field>& fields, int64_t numel,
                                        int64_t nbytes, const std::string& who, const std::string& desc) {
    auto bad = [&](const std::string& msg) { src_.fail(who + " " + msg); };
    uint32_t want = 0;
    switch (dt) {
      case DataType::kFloat:
        want = 4;
        break;
      case DataType::kInt64:
        want = 7;
        break;
      case DataType::kDouble:
        want = 10;
        break;
      case DataType::kUint32:
      case DataType::kUint64:
        want = 11;
        break;
      default:
        want = 5;
        break;  // int32_data: all narrower types (one element, or one int4 pair, each)
    }
    static const char* kFieldNames[] = {"", "",           "", "", "float_data",  "int32_data",
                                        "", "int64_data", "", "", "double_data", "uint64_data"};
    std::vector<uint64_t> vals;  // varint / fixed values, one per stored element
    for (const Field& f : fields) {
      if (f.number != want)
        bad(std::string("(") + data_type_name(dt) + ") stores values in " + kFieldNames[f.number] +
            ", expected " + kFieldNames[want]);
      const bool fixed32 = want == 4, fixed64 = want == 10;
      const uint32_t scalar = fixed32 ? wire::kFixed32 : fixed64 ? wire::kFixed64 : wire::kVarint;
      if (f.type == scalar) {
        vals.push_back(f.varint);
        continue;
      }
      wire::expect_type(src_, f, wire::kLen, kFieldNames[want]);
      const uint8_t* p = f.bytes.data();
      const uint8_t* end = p + f.bytes.size();
      const size_t width = fixed32 ? 4 : fixed64 ? 8 : 0;
      if (width != 0 && f.bytes.size() % width != 0)
        src_.fail_at(f.start, who + " " + kFieldNames[want] + " has " + std::to_string(f.bytes.size()) +
                                  " bytes, not a multiple of " + std::to_string(width));
      // Every stored element costs at least one byte of the file: bounded by its size.
      while (p < end) {
        if (width != 0) {
          uint64_t v = 0;
          std::memcpy(&v, p, width);
          p += width;
          vals.push_back(v);
        } else {
          vals.push_back(wire::read_varint(src_, p, end));
        }
      }
    }
    const bool pairs = data_type_bits(dt) == 4;
    const int64_t expected = pairs ? (numel + 1) / 2 : numel;
    if (static_cast<int64_t>(vals.size()) != expected)
      bad(std::string("has ") + std::to_string(vals.size()) + " values in " + kFieldNames[want] +
          ", expected " + std::to_string(expected) + " for " + desc);
    auto& out = m_.owned.emplace_back(static_cast<size_t>(nbytes));
    const size_t width = pairs ? 1 : static_cast<size_t>(data_type_bits(dt) / 8);
    for (size_t i = 0; i < vals.size(); ++i) {
      const uint64_t v = vals[i];
      std::memcpy(out.data() + i * width, &v, width);  // little-endian host: low bytes first
    }
    return {out.data(), out.size()};
  }

  Model& m_;
  std::string base_dir_;
  wire::Source src_;
};

std::string dir_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

Model load_model(const std::string& path) {
  Model m;
  m.path = path;
  m.file = std::make_shared<MappedFile>(path);
  Parser p(m, m.file->bytes(), path, dir_of(path));
  p.parse_model(m.file->bytes());
  return m;
}

Model parse_model(std::span<const uint8_t> bytes, const std::string& base_dir) {
  Model m;
  // Copied so the returned Model never points into the caller's buffer.
  auto& copy = m.owned.emplace_back(bytes.begin(), bytes.end());
  const std::span<const uint8_t> view(copy.data(), copy.size());
  Parser p(m, view, "model", base_dir);
  p.parse_model(view);
  return m;
}

}  // namespace nbits::onnx
