// TensorProto: dims (element count overflow-checked), dtype, and the data: raw_data viewed in
// place (zero-copy; copied only when misaligned for its type), typed fields decoded into the
// model's owned storage, or external data (external_data.cc).
#include <cstring>

#include "base/error.h"
#include "onnx/parser.h"

namespace nbits::onnx::detail {
namespace {

constexpr int32_t kDataLocationExternal = 1;

std::string shape_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i != 0) s += ',';
    s += std::to_string(dims[i]);
  }
  s += ']';
  return s;
}

}  // namespace

Tensor Parser::parse_tensor(std::span<const uint8_t> bytes, const std::string& context) {
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

std::span<const uint8_t> Parser::aligned(DataType dt, std::span<const uint8_t> b) {
  const int64_t bits = data_type_bits(dt);
  const uintptr_t align = bits >= 16 ? static_cast<uintptr_t>(bits / 8) : 1;
  if (b.empty() || reinterpret_cast<uintptr_t>(b.data()) % align == 0) return b;
  if (b.size() >= Tensor::kMisalignedViewBytes) return b;  // viewed in place (model.h)
  auto& v = m_.owned.emplace_back(b.begin(), b.end());
  return {v.data(), v.size()};
}

std::span<const uint8_t> Parser::decode_typed(DataType dt, const std::vector<Field>& fields, int64_t numel,
                                              int64_t nbytes, const std::string& who,
                                              const std::string& desc) {
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

}  // namespace nbits::onnx::detail
