#include "onnx/writer.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "base/error.h"
#include "onnx/wire.h"

namespace nbits::onnx {

using wire::put_bytes_field;
using wire::put_int_field;

namespace {
WriterAttr make_attr(std::string name, AttrType type) {
  WriterAttr a;
  a.name = std::move(name);
  a.type = type;
  return a;
}
}  // namespace

WriterAttr int_attr(std::string name, int64_t v) {
  WriterAttr a = make_attr(std::move(name), AttrType::kInt);
  a.i = v;
  return a;
}
WriterAttr float_attr(std::string name, float v) {
  WriterAttr a = make_attr(std::move(name), AttrType::kFloat);
  a.f = v;
  return a;
}
WriterAttr string_attr(std::string name, std::string v) {
  WriterAttr a = make_attr(std::move(name), AttrType::kString);
  a.s = std::move(v);
  return a;
}
WriterAttr ints_attr(std::string name, std::vector<int64_t> v) {
  WriterAttr a = make_attr(std::move(name), AttrType::kInts);
  a.ints = std::move(v);
  return a;
}
WriterAttr floats_attr(std::string name, std::vector<float> v) {
  WriterAttr a = make_attr(std::move(name), AttrType::kFloats);
  a.floats = std::move(v);
  return a;
}
WriterAttr strings_attr(std::string name, std::vector<std::string> v) {
  WriterAttr a = make_attr(std::move(name), AttrType::kStrings);
  a.strings = std::move(v);
  return a;
}
WriterAttr tensor_attr(std::string name, DataType dtype, std::vector<int64_t> dims,
                       std::vector<uint8_t> bytes) {
  WriterAttr a = make_attr(std::move(name), AttrType::kTensor);
  a.tensor_dtype = dtype;
  a.tensor_dims = std::move(dims);
  a.tensor_bytes = std::move(bytes);
  return a;
}

ModelWriter::ModelWriter() = default;

void ModelWriter::set_producer(std::string name, std::string version) {
  producer_name_ = std::move(name);
  producer_version_ = std::move(version);
}

void ModelWriter::add_opset(std::string domain, int64_t version) {
  opsets_.push_back({std::move(domain), version});
}

void ModelWriter::add_input(std::string name, DataType dtype, std::vector<Dim> dims) {
  inputs_.push_back({std::move(name), dtype, std::move(dims)});
}

void ModelWriter::add_output(std::string name, DataType dtype, std::vector<Dim> dims) {
  outputs_.push_back({std::move(name), dtype, std::move(dims)});
}

void ModelWriter::check_new_initializer(const std::string& name, DataType dtype,
                                        const std::vector<int64_t>& dims, size_t nbytes) const {
  NBITS_CHECK(!name.empty(), "ModelWriter: initializer without a name");
  NBITS_CHECK(init_names_.count(name) == 0, "ModelWriter: duplicate initializer '", name, "'");
  NBITS_CHECK(data_type_bits(dtype) != 0, "ModelWriter: initializer '", name, "' has unsupported data type ",
              static_cast<int>(dtype));
  int64_t numel = 1;
  for (int64_t d : dims) {
    NBITS_CHECK(d >= 0, "ModelWriter: initializer '", name, "' has a negative dimension");
    NBITS_CHECK(!__builtin_mul_overflow(numel, d, &numel) && numel <= (int64_t{1} << 56),
                "ModelWriter: initializer '", name, "' is too large");
  }
  NBITS_CHECK(static_cast<uint64_t>(tensor_bytes(dtype, numel)) == nbytes, "ModelWriter: initializer '", name,
              "' has ", nbytes, " bytes, its ", data_type_name(dtype), " shape needs ",
              tensor_bytes(dtype, numel));
}

void ModelWriter::add_initializer(std::string name, DataType dtype, std::vector<int64_t> dims,
                                  std::vector<uint8_t> bytes) {
  check_new_initializer(name, dtype, dims, bytes.size());
  init_names_.insert(name);
  Init init;
  init.name = std::move(name);
  init.dtype = dtype;
  init.dims = std::move(dims);
  init.owned = std::move(bytes);
  init.bytes = init.owned;  // the vector's buffer survives moves of Init
  inits_.push_back(std::move(init));
}

void ModelWriter::add_initializer(std::string name, DataType dtype, std::vector<int64_t> dims,
                                  std::span<const uint8_t> bytes) {
  check_new_initializer(name, dtype, dims, bytes.size());
  init_names_.insert(name);
  Init init;
  init.name = std::move(name);
  init.dtype = dtype;
  init.dims = std::move(dims);
  init.bytes = bytes;
  inits_.push_back(std::move(init));
}

void ModelWriter::add_external_initializer(std::string name, DataType dtype, std::vector<int64_t> dims,
                                           std::string location, int64_t offset, int64_t length) {
  init_names_.insert(name);
  Init init;
  init.name = std::move(name);
  init.dtype = dtype;
  init.dims = std::move(dims);
  init.ext_preset = true;
  init.ext_location = std::move(location);
  init.ext_offset = offset;
  init.ext_length = length;
  inits_.push_back(std::move(init));
}

void ModelWriter::add_node(std::string op_type, std::string domain, std::string name,
                           std::vector<std::string> inputs, std::vector<std::string> outputs,
                           std::vector<WriterAttr> attributes) {
  nodes_.push_back({std::move(op_type), std::move(domain), std::move(name), std::move(inputs),
                    std::move(outputs), std::move(attributes)});
}

namespace {

constexpr uint64_t kAlignThreshold = uint64_t{1} << 20;  // onnx_ir: align tensors > 1 MiB
constexpr uint64_t kAlignment = uint64_t{1} << 16;       // to 64 KiB

void put_external_entry(std::vector<uint8_t>& out, const std::string& key, const std::string& value) {
  std::vector<uint8_t> e;
  put_bytes_field(e, 1, key);
  put_bytes_field(e, 2, value);
  put_bytes_field(out, 13, std::span<const uint8_t>(e));
}

// TensorProto header fields (dims, data_type, name) in onnx's field order.
void put_tensor_header(std::vector<uint8_t>& t, const std::string& name, DataType dtype,
                       const std::vector<int64_t>& dims) {
  for (int64_t d : dims) put_int_field(t, 1, d);
  put_int_field(t, 2, static_cast<int64_t>(dtype));
  if (!name.empty()) put_bytes_field(t, 8, name);
}

Chunks inline_tensor(const std::string& name, DataType dtype, const std::vector<int64_t>& dims,
                     std::span<const uint8_t> bytes) {
  Chunks c;
  auto& t = c.tail();
  put_tensor_header(t, name, dtype, dims);
  wire::put_tag(t, 9, wire::kLen);
  wire::put_varint(t, bytes.size());
  c.ref(bytes);
  return c;
}

Chunks external_tensor(const std::string& name, DataType dtype, const std::vector<int64_t>& dims,
                       const std::string& location, int64_t offset, int64_t length) {
  Chunks c;
  auto& t = c.tail();
  put_tensor_header(t, name, dtype, dims);
  put_external_entry(t, "location", location);
  put_external_entry(t, "offset", std::to_string(offset));
  put_external_entry(t, "length", std::to_string(length));
  put_int_field(t, 14, 1);  // data_location = EXTERNAL
  return c;
}

std::vector<uint8_t> value_info(const std::string& name, DataType dtype, const std::vector<Dim>& dims) {
  std::vector<uint8_t> shape;
  for (const Dim& d : dims) {
    std::vector<uint8_t> dim;
    if (!d.param.empty()) {
      put_bytes_field(dim, 2, d.param);
    } else {
      put_int_field(dim, 1, d.value);
    }
    put_bytes_field(shape, 1, std::span<const uint8_t>(dim));
  }
  std::vector<uint8_t> tensor_type;
  put_int_field(tensor_type, 1, static_cast<int64_t>(dtype));
  put_bytes_field(tensor_type, 2, std::span<const uint8_t>(shape));
  std::vector<uint8_t> type;
  put_bytes_field(type, 1, std::span<const uint8_t>(tensor_type));
  std::vector<uint8_t> v;
  put_bytes_field(v, 1, name);
  put_bytes_field(v, 2, std::span<const uint8_t>(type));
  return v;
}

Chunks attribute(const WriterAttr& a) {
  Chunks c;
  put_bytes_field(c.tail(), 1, a.name);
  switch (a.type) {
    case AttrType::kFloat:
      wire::put_float_field(c.tail(), 2, a.f);
      break;
    case AttrType::kInt:
      put_int_field(c.tail(), 3, a.i);
      break;
    case AttrType::kString:
      put_bytes_field(c.tail(), 4, a.s);
      break;
    case AttrType::kTensor:
      c.message(5, inline_tensor("", a.tensor_dtype, a.tensor_dims, a.tensor_bytes));
      break;
    case AttrType::kFloats:
      for (float v : a.floats) wire::put_float_field(c.tail(), 7, v);
      break;
    case AttrType::kInts:
      for (int64_t v : a.ints) put_int_field(c.tail(), 8, v);
      break;
    case AttrType::kStrings:
      for (const auto& v : a.strings) put_bytes_field(c.tail(), 9, v);
      break;
    default:
      fail("ModelWriter: attribute '", a.name, "' has unsupported type ", static_cast<int>(a.type));
  }
  put_int_field(c.tail(), 20, static_cast<int64_t>(a.type));
  return c;
}

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

File open_for_write(const std::string& path) {
  File f(std::fopen(path.c_str(), "wb"));
  if (!f) fail("cannot create ", path, ": ", std::strerror(errno));
  return f;
}

void close_checked(File f, const std::string& path) {
  std::FILE* raw = f.release();
  if (std::fclose(raw) != 0) fail("cannot write ", path, ": ", std::strerror(errno));
}

}  // namespace

Chunks ModelWriter::build(const std::vector<const ExternalPlace*>& places) const {
  Chunks graph;
  for (const NodeDef& n : nodes_) {
    Chunks node;
    for (const auto& s : n.inputs) put_bytes_field(node.tail(), 1, s);
    for (const auto& s : n.outputs) put_bytes_field(node.tail(), 2, s);
    if (!n.name.empty()) put_bytes_field(node.tail(), 3, n.name);
    put_bytes_field(node.tail(), 4, n.op_type);
    for (const auto& a : n.attributes) node.message(5, attribute(a));
    if (!n.domain.empty()) put_bytes_field(node.tail(), 7, n.domain);
    graph.message(1, std::move(node));
  }
  put_bytes_field(graph.tail(), 2, graph_name_);
  for (size_t i = 0; i < inits_.size(); ++i) {
    const Init& t = inits_[i];
    if (t.ext_preset) {
      graph.message(5, external_tensor(t.name, t.dtype, t.dims, t.ext_location, t.ext_offset, t.ext_length));
    } else if (places[i] != nullptr) {
      graph.message(
          5, external_tensor(t.name, t.dtype, t.dims, places[i]->location,
                             static_cast<int64_t>(places[i]->offset), static_cast<int64_t>(t.bytes.size())));
    } else {
      graph.message(5, inline_tensor(t.name, t.dtype, t.dims, t.bytes));
    }
  }
  for (const auto& v : inputs_)
    put_bytes_field(graph.tail(), 11, std::span<const uint8_t>(value_info(v.name, v.dtype, v.dims)));
  for (const auto& v : outputs_)
    put_bytes_field(graph.tail(), 12, std::span<const uint8_t>(value_info(v.name, v.dtype, v.dims)));

  Chunks model;
  put_int_field(model.tail(), 1, ir_version_);
  put_bytes_field(model.tail(), 2, producer_name_);
  if (!producer_version_.empty()) put_bytes_field(model.tail(), 3, producer_version_);
  model.message(7, std::move(graph));
  for (const auto& o : opsets_) {
    std::vector<uint8_t> op;
    if (!o.domain.empty()) put_bytes_field(op, 1, o.domain);
    put_int_field(op, 2, o.version);
    put_bytes_field(model.tail(), 8, std::span<const uint8_t>(op));
  }
  return model;
}

std::vector<uint8_t> ModelWriter::serialize() const {
  return build(std::vector<const ExternalPlace*>(inits_.size(), nullptr)).flatten();
}

void ModelWriter::save(const std::string& onnx_path, bool external_data, size_t threshold) const {
  std::vector<ExternalPlace> slots(inits_.size());
  std::vector<const ExternalPlace*> places(inits_.size(), nullptr);
  if (external_data) {
    const std::string data_path = onnx_path + ".data";
    const std::string location = base_name(data_path);
    std::vector<size_t> order;
    for (size_t i = 0; i < inits_.size(); ++i)
      if (!inits_[i].ext_preset && inits_[i].bytes.size() >= threshold) order.push_back(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return inits_[a].bytes.size() < inits_[b].bytes.size(); });
    if (!order.empty()) {
      File f = open_for_write(data_path);
      std::setvbuf(f.get(), nullptr, _IOFBF, 1 << 20);
      uint64_t offset = 0;
      static const std::vector<uint8_t> zeros(kAlignment, 0);
      for (size_t i : order) {
        const auto bytes = inits_[i].bytes;
        if (bytes.size() > kAlignThreshold) {
          const uint64_t aligned = (offset + kAlignment - 1) / kAlignment * kAlignment;
          write_all(f.get(), data_path, std::span<const uint8_t>(zeros.data(), aligned - offset));
          offset = aligned;
        }
        write_all(f.get(), data_path, bytes);
        slots[i] = {location, offset};
        places[i] = &slots[i];
        offset += bytes.size();
      }
      close_checked(std::move(f), data_path);
    }
  }
  const Chunks model = build(places);
  File f = open_for_write(onnx_path);
  model.write(f.get(), onnx_path);
  close_checked(std::move(f), onnx_path);
}

ModelWriter writer_from_model(const Model& m) {
  ModelWriter w;
  w.set_ir_version(m.ir_version);
  w.set_producer(m.producer_name, m.producer_version);
  w.set_graph_name(m.graph.name);
  for (const auto& o : m.opset_imports) w.add_opset(o.domain, o.version);
  for (const auto& v : m.graph.inputs) w.add_input(v.name, v.elem_type, v.dims);
  for (const auto& v : m.graph.outputs) w.add_output(v.name, v.elem_type, v.dims);
  for (const auto& t : m.graph.initializers) w.add_initializer(t.name, t.dtype, t.dims, t.bytes);
  for (const auto& n : m.graph.nodes) {
    std::vector<WriterAttr> attrs;
    for (const auto& a : n.attributes) {
      switch (a.type) {
        case AttrType::kInt:
          attrs.push_back(int_attr(a.name, a.i));
          break;
        case AttrType::kFloat:
          attrs.push_back(float_attr(a.name, a.f));
          break;
        case AttrType::kString:
          attrs.push_back(string_attr(a.name, a.s));
          break;
        case AttrType::kInts:
          attrs.push_back(ints_attr(a.name, a.ints));
          break;
        case AttrType::kFloats:
          attrs.push_back(floats_attr(a.name, a.floats));
          break;
        case AttrType::kStrings:
          attrs.push_back(strings_attr(a.name, a.strings));
          break;
        case AttrType::kTensor:
          attrs.push_back(tensor_attr(a.name, a.t->dtype, a.t->dims, {a.t->bytes.begin(), a.t->bytes.end()}));
          break;
        default:
          break;
      }
    }
    w.add_node(n.op_type, n.domain, n.name, n.inputs, n.outputs, std::move(attrs));
  }
  return w;
}

}  // namespace nbits::onnx
