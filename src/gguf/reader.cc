#include "gguf/reader.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "base/error.h"
#include "onnx/wire.h"

namespace nbits::gguf {

using onnx::wire::printable;

const char* value_type_name(ValueType t) {
  switch (t) {
    case ValueType::kU8:
      return "uint8";
    case ValueType::kI8:
      return "int8";
    case ValueType::kU16:
      return "uint16";
    case ValueType::kI16:
      return "int16";
    case ValueType::kU32:
      return "uint32";
    case ValueType::kI32:
      return "int32";
    case ValueType::kF32:
      return "float32";
    case ValueType::kBool:
      return "bool";
    case ValueType::kString:
      return "string";
    case ValueType::kArray:
      return "array";
    case ValueType::kU64:
      return "uint64";
    case ValueType::kI64:
      return "int64";
    case ValueType::kF64:
      return "float64";
  }
  return "unknown";
}

namespace {

// Bytes of one scalar of type t; 0 for string/array/unknown.
size_t scalar_size(ValueType t) {
  switch (t) {
    case ValueType::kU8:
    case ValueType::kI8:
    case ValueType::kBool:
      return 1;
    case ValueType::kU16:
    case ValueType::kI16:
      return 2;
    case ValueType::kU32:
    case ValueType::kI32:
    case ValueType::kF32:
      return 4;
    case ValueType::kU64:
    case ValueType::kI64:
    case ValueType::kF64:
      return 8;
    default:
      return 0;
  }
}

bool is_int_type(ValueType t) { return scalar_size(t) != 0 && t != ValueType::kF32 && t != ValueType::kF64; }

// Decodes one little-endian scalar at p into v's i/u/f.
void decode_scalar(ValueType t, const uint8_t* p, int64_t& i, uint64_t& u, double& f) {
  auto load = [p](auto x) {
    std::memcpy(&x, p, sizeof(x));
    return x;
  };
  switch (t) {
    case ValueType::kU8:
      u = load(uint8_t{}), i = static_cast<int64_t>(u);
      break;
    case ValueType::kI8:
      i = load(int8_t{}), u = static_cast<uint64_t>(i);
      break;
    case ValueType::kBool:
      u = load(uint8_t{}) != 0, i = static_cast<int64_t>(u);
      break;
    case ValueType::kU16:
      u = load(uint16_t{}), i = static_cast<int64_t>(u);
      break;
    case ValueType::kI16:
      i = load(int16_t{}), u = static_cast<uint64_t>(i);
      break;
    case ValueType::kU32:
      u = load(uint32_t{}), i = static_cast<int64_t>(u);
      break;
    case ValueType::kI32:
      i = load(int32_t{}), u = static_cast<uint64_t>(i);
      break;
    case ValueType::kU64:
      u = load(uint64_t{}), i = static_cast<int64_t>(u);
      break;
    case ValueType::kI64:
      i = load(int64_t{}), u = static_cast<uint64_t>(i);
      break;
    case ValueType::kF32:
      f = load(float{});
      break;
    case ValueType::kF64:
      f = load(double{});
      break;
    default:
      break;
  }
}

// A bounds-checked cursor over the file; errors name the file and the offset.
class Cursor {
 public:
  Cursor(const onnx::wire::Source& src) : src_(src), p_(src.base), end_(src.base + src.size) {}
  size_t left() const { return static_cast<size_t>(end_ - p_); }
  size_t pos() const { return static_cast<size_t>(p_ - src_.base); }
  const uint8_t* ptr() const { return p_; }

  const uint8_t* take(uint64_t n, const std::string& what) {
    if (n > left())
      src_.fail_at(p_, "truncated file reading " + what + " (" + std::to_string(n) + " bytes, " +
                           std::to_string(left()) + " left)");
    const uint8_t* q = p_;
    p_ += n;
    return q;
  }
  template <typename T>
  T read(const std::string& what) {
    T v;
    std::memcpy(&v, take(sizeof(T), what), sizeof(T));
    return v;
  }
  std::string str(const std::string& what) {
    const uint8_t* at = p_;
    const uint64_t n = read<uint64_t>("the length of " + what);
    if (n > left())
      src_.fail_at(at, "length " + std::to_string(n) + " of " + what + " runs past the end of the file (" +
                           std::to_string(left()) + " bytes left)");
    const auto* s = reinterpret_cast<const char*>(take(n, what));
    return std::string(s, n);
  }
  [[noreturn]] void fail(const std::string& msg) const { src_.fail_at(p_, msg); }

 private:
  const onnx::wire::Source& src_;
  const uint8_t* p_;
  const uint8_t* end_;
};

void read_value(Cursor& c, ValueType t, Value& v, const std::string& what) {
  v.type = t;
  if (t == ValueType::kString) {
    v.str = c.str(what);
    return;
  }
  if (t == ValueType::kArray) {
    const uint32_t et = c.read<uint32_t>("the element type of " + what);
    v.array_type = static_cast<ValueType>(et);
    v.count = c.read<uint64_t>("the length of " + what);
    if (v.array_type == ValueType::kArray) c.fail(what + " is an array of arrays (not supported)");
    if (v.array_type == ValueType::kString) {
      // Each string takes at least its 8-byte length: bound the count before reserving.
      if (v.count > c.left() / 8)
        c.fail(what + " has " + std::to_string(v.count) + " strings, more than the " +
               std::to_string(c.left()) + " bytes left can hold");
      v.strings.reserve(v.count);
      for (uint64_t e = 0; e < v.count; ++e)
        v.strings.push_back(c.str("string " + std::to_string(e) + " of " + what));
      return;
    }
    const size_t es = scalar_size(v.array_type);
    if (es == 0) c.fail(what + " has unknown element type " + std::to_string(et));
    if (v.count > c.left() / es)
      c.fail(what + " has " + std::to_string(v.count) + " " + value_type_name(v.array_type) +
             " elements, past the end of the file (" + std::to_string(c.left()) + " bytes left)");
    v.raw = {c.take(v.count * es, what), v.count * es};
    return;
  }
  const size_t n = scalar_size(t);
  if (n == 0) c.fail(what + " has unknown value type " + std::to_string(static_cast<uint32_t>(t)));
  decode_scalar(t, c.take(n, what), v.i, v.u, v.f);
}

}  // namespace

bool Value::is_integer() const { return is_int_type(type); }

int64_t Value::int_at(uint64_t e) const {
  NBITS_ASSERT(type == ValueType::kArray && e < count && is_int_type(array_type));
  int64_t iv = 0;
  uint64_t uv = 0;
  double fv = 0;
  decode_scalar(array_type, raw.data() + e * scalar_size(array_type), iv, uv, fv);
  return iv;
}

double Value::float_at(uint64_t e) const {
  NBITS_ASSERT(type == ValueType::kArray && e < count && scalar_size(array_type) != 0);
  int64_t iv = 0;
  uint64_t uv = 0;
  double fv = 0;
  decode_scalar(array_type, raw.data() + e * scalar_size(array_type), iv, uv, fv);
  return is_int_type(array_type) ? static_cast<double>(iv) : fv;
}

std::string TensorInfo::shape_str() const {
  std::string s = "[";
  for (uint32_t d = 0; d < n_dims; ++d) s += (d ? ", " : "") + std::to_string(ne[d]);
  return s + "]";
}

File File::open(const std::string& path) {
  File f;
  f.label_ = path;
  f.mapping = std::make_shared<MappedFile>(path);
  f.parse_bytes(f.mapping->bytes());
  return f;
}

File File::parse(std::span<const uint8_t> bytes, const std::string& label) {
  File f;
  f.label_ = label;
  f.owned.assign(bytes.begin(), bytes.end());
  f.parse_bytes(f.owned);
  return f;
}

void File::fail(const std::string& msg) const { nbits::fail(label_, ": ", msg); }

void File::parse_bytes(std::span<const uint8_t> bytes) {
  const onnx::wire::Source src{label_, bytes.data(), bytes.size()};
  Cursor c(src);
  if (bytes.size() < 4 || std::memcmp(bytes.data(), "GGUF", 4) != 0)
    fail("not a GGUF file (the first 4 bytes are not 'GGUF')");
  c.take(4, "the magic");
  version_ = c.read<uint32_t>("the version");
  if (version_ == 1) fail("GGUF version 1 is not supported (only versions 2 and 3; re-convert the model)");
  if ((version_ & 0xffff) == 0 && version_ != 0)
    fail("GGUF version " + std::to_string(version_) +
         " looks byte-swapped (big-endian files are not supported)");
  if (version_ != 2 && version_ != 3)
    fail("GGUF version " + std::to_string(version_) + " is not supported (only versions 2 and 3)");
  const uint64_t n_tensors = c.read<uint64_t>("the tensor count");
  const uint64_t n_kv = c.read<uint64_t>("the metadata count");
  // A metadata pair takes at least 8 (key length) + 4 (type) + 1 bytes, a tensor
  // info 8 + 4 + 4 + 8: reserve no more than the file can hold (a bad count then
  // fails where the file runs out).
  kv_.reserve(std::min<uint64_t>(n_kv, c.left() / 13));
  for (uint64_t k = 0; k < n_kv; ++k) {
    const std::string key = c.str("the key of metadata pair " + std::to_string(k));
    if (key.empty()) c.fail("metadata pair " + std::to_string(k) + " has an empty key");
    const std::string what = "metadata '" + printable(key) + "'";
    const uint32_t t = c.read<uint32_t>("the type of " + what);
    Value v;
    read_value(c, static_cast<ValueType>(t), v, what);
    if (!kv_index_.emplace(key, kv_.size()).second) fail("duplicate metadata key '" + printable(key) + "'");
    kv_.emplace_back(key, std::move(v));
  }
  if (const Value* a = find("general.alignment")) {
    if (a->type != ValueType::kU32)
      fail(std::string("metadata 'general.alignment' is ") + value_type_name(a->type) + ", expected uint32");
    if (a->u == 0 || (a->u & (a->u - 1)) != 0)
      fail("general.alignment " + std::to_string(a->u) + " is not a power of two");
    alignment_ = a->u;
  }

  tensors_.reserve(std::min<uint64_t>(n_tensors, c.left() / 24));
  for (uint64_t k = 0; k < n_tensors; ++k) {
    TensorInfo t;
    t.name = c.str("the name of tensor " + std::to_string(k));
    const std::string what = "tensor '" + printable(t.name) + "'";
    if (t.name.empty()) c.fail("tensor " + std::to_string(k) + " has an empty name");
    t.n_dims = c.read<uint32_t>("the dimension count of " + what);
    if (t.n_dims == 0 || t.n_dims > 4)
      c.fail(what + " has " + std::to_string(t.n_dims) + " dimensions (1 to 4 allowed)");
    int64_t numel = 1;
    for (uint32_t d = 0; d < t.n_dims; ++d) {
      const uint64_t ne = c.read<uint64_t>("dimension " + std::to_string(d) + " of " + what);
      if (ne == 0) c.fail(what + " has a zero dimension " + std::to_string(d));
      if (ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max() / numel))
        c.fail(what + " has more elements than int64 can count");
      t.ne[d] = static_cast<int64_t>(ne);
      numel *= t.ne[d];
    }
    const uint32_t type = c.read<uint32_t>("the type of " + what);
    const TypeTraits tr = type_traits(type);
    if (tr.name == nullptr) c.fail(what + " has unknown ggml type " + std::to_string(type));
    t.type = static_cast<GgmlType>(type);
    if (t.ne[0] % tr.block != 0)
      fail(what + " (" + tr.name + ") has a first dimension " + std::to_string(t.ne[0]) +
           " that is not a multiple of its block size " + std::to_string(tr.block));
    t.offset = c.read<uint64_t>("the data offset of " + what);
    if (t.offset % alignment_ != 0)
      fail(what + " data offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
           std::to_string(alignment_));
    if (!tensor_index_.emplace(t.name, tensors_.size()).second) fail("duplicate " + what);
    tensors_.push_back(std::move(t));
  }

  // The data section starts at the next multiple of the alignment.
  const uint64_t pos = c.pos();
  data_offset_ = (pos + alignment_ - 1) / alignment_ * alignment_;
  const uint64_t size = bytes.size();
  if (!tensors_.empty() && data_offset_ > size)
    fail("data section at offset " + std::to_string(data_offset_) +
         " starts past the end of the file (size " + std::to_string(size) + ")");
  for (TensorInfo& t : tensors_) {
    const TypeTraits tr = type_traits(t.type);
    const uint64_t n = static_cast<uint64_t>(t.numel() / tr.block) * static_cast<uint64_t>(tr.bytes);
    if (static_cast<uint64_t>(t.numel() / tr.block) > std::numeric_limits<uint64_t>::max() / tr.bytes ||
        t.offset > size - data_offset_ || n > size - data_offset_ - t.offset)
      fail("tensor '" + printable(t.name) + "' data [" + std::to_string(t.offset) + ", " +
           std::to_string(t.offset) + "+" + std::to_string(n) + ") past the end of the file (data at " +
           std::to_string(data_offset_) + ", size " + std::to_string(size) + ")");
    t.bytes = bytes.subspan(data_offset_ + t.offset, n);
  }
  // No two tensors may share bytes.
  std::vector<const TensorInfo*> by_off;
  for (const TensorInfo& t : tensors_) by_off.push_back(&t);
  std::sort(by_off.begin(), by_off.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_off.size(); ++i) {
    const TensorInfo& a = *by_off[i - 1];
    const TensorInfo& b = *by_off[i];
    if (a.offset + a.bytes.size() > b.offset)
      fail("tensors '" + printable(a.name) + "' [" + std::to_string(a.offset) + ", " +
           std::to_string(a.offset + a.bytes.size()) + ") and '" + printable(b.name) + "' [" +
           std::to_string(b.offset) + ", ...) overlap");
  }
}

const Value* File::find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const TensorInfo* File::tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

[[noreturn]] void wrong_type(const File& f, std::string_view key, const Value& v, const char* want) {
  std::string got = value_type_name(v.type);
  if (v.type == ValueType::kArray) got += std::string(" of ") + value_type_name(v.array_type);
  f.fail("metadata '" + printable(key) + "' is " + got + ", expected " + want);
}

}  // namespace

std::optional<int64_t> File::get_int(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_integer()) wrong_type(*this, key, *v, "an integer");
  if (v->type == ValueType::kU64 && v->u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    fail("metadata '" + printable(key) + "' = " + std::to_string(v->u) + " is too large");
  return v->i;
}

std::optional<double> File::get_float(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_float()) return v->f;
  if (v->is_integer() && v->type != ValueType::kBool) return static_cast<double>(v->i);
  wrong_type(*this, key, *v, "a number");
}

std::optional<std::string> File::get_string(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (v->type != ValueType::kString) wrong_type(*this, key, *v, "a string");
  return v->str;
}

std::optional<bool> File::get_bool(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (v->type != ValueType::kBool) wrong_type(*this, key, *v, "a bool");
  return v->i != 0;
}

int64_t File::get_int_required(std::string_view key) const {
  const auto v = get_int(key);
  if (!v) fail("missing metadata key '" + printable(key) + "'");
  return *v;
}

const std::vector<std::string>* File::get_strings(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return nullptr;
  if (v->type != ValueType::kArray || v->array_type != ValueType::kString)
    wrong_type(*this, key, *v, "an array of strings");
  return &v->strings;
}

std::vector<double> File::get_floats(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return {};
  if (v->type != ValueType::kArray || scalar_size(v->array_type) == 0 || v->array_type == ValueType::kBool)
    wrong_type(*this, key, *v, "an array of numbers");
  std::vector<double> r(v->count);
  for (uint64_t e = 0; e < v->count; ++e) r[e] = v->float_at(e);
  return r;
}

std::vector<int64_t> File::get_ints(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return {};
  if (v->type != ValueType::kArray || !is_int_type(v->array_type))
    wrong_type(*this, key, *v, "an array of integers");
  std::vector<int64_t> r(v->count);
  for (uint64_t e = 0; e < v->count; ++e) r[e] = v->int_at(e);
  return r;
}

}  // namespace nbits::gguf
