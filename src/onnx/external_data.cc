// TensorProto.external_data: the location / offset / length entries, the location checked
// to be a relative path inside the model's directory, each data file mapped once per model
// (Model::external_files) and the range checked against the file and the tensor's size.
#include "base/error.h"
#include "base/mapped_file.h"
#include "onnx/parser.h"

namespace nbits::onnx::detail {
namespace {

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

}  // namespace

void Parser::parse_external_entry(const Field& outer, ExternalRef& ext) {
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

std::span<const uint8_t> Parser::resolve_external(const ExternalRef& ext, int64_t nbytes,
                                                  const std::string& who, const std::string& desc) {
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

}  // namespace nbits::onnx::detail
