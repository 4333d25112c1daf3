// The model view (onnx/model.h): dtype names and sizes, attribute getters, lookups, and the
// two entry points, load_model (mmap a file) and parse_model (a copy of bytes), both run by the
// ModelProto parser of onnx/parser.h.
#include "onnx/model.h"

#include "base/error.h"
#include "onnx/parser.h"
#include "onnx/wire.h"

namespace nbits::onnx {

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

bool Tensor::aligned() const {
  const int64_t bits = data_type_bits(dtype);
  const auto align = bits >= 16 ? static_cast<uintptr_t>(bits / 8) : uintptr_t{1};
  return reinterpret_cast<uintptr_t>(bytes.data()) % align == 0;
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

void Model::materialize(std::string_view name) {
  const auto it = deferred.find(name);
  if (it == deferred.end()) return;
  const std::function<std::vector<uint8_t>()> make = std::move(it->second);
  deferred.erase(it);
  Tensor* t = nullptr;
  for (Tensor& i : graph.initializers)
    if (i.name == name) t = &i;
  NBITS_CHECK(t != nullptr, "deferred initializer '", name, "' is not in the graph");
  std::vector<uint8_t>& b = owned.emplace_back(make());
  NBITS_CHECK(static_cast<int64_t>(b.size()) == tensor_bytes(t->dtype, t->numel()), "initializer '", name,
              "': made ", b.size(), " bytes, its shape needs ", tensor_bytes(t->dtype, t->numel()));
  t->bytes = b;
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
  detail::Parser p(m, m.file->bytes(), path, dir_of(path));
  p.parse_model(m.file->bytes());
  return m;
}

Model parse_model(std::span<const uint8_t> bytes, const std::string& base_dir) {
  Model m;
  // Copied so the returned Model never points into the caller's buffer.
  auto& copy = m.owned.emplace_back(bytes.begin(), bytes.end());
  const std::span<const uint8_t> view(copy.data(), copy.size());
  detail::Parser p(m, view, "model", base_dir);
  p.parse_model(view);
  return m;
}

}  // namespace nbits::onnx
