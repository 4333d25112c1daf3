// GGUF (llama.cpp's model file) reader, versions 2 and 3: header, metadata of
// every value type (arrays of scalars and of strings included), tensor infos
// and the data section, memory-mapped. Every length, count, string size, dim,
// offset and type is checked against the file (overflow-safe); a malformed file
// throws nbits::Error with one line starting with the file name.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/mapped_file.h"
#include "gguf/types.h"

namespace nbits::gguf {

enum class ValueType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

const char* value_type_name(ValueType t);  // "uint32", "string", "array", ...

// One metadata value. Scalars: integers in `i` (uint64 values above INT64_MAX
// keep their bits in `u`), floats in `f`, bool in `i` (0/1). Strings in `str`.
// Arrays: `array_type` and `count`; string elements in `strings`, numeric ones
// stay in the file (`raw`, little-endian) and are read through the accessors.
struct Value {
  ValueType type = ValueType::kU8;
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;
  std::string str;
  ValueType array_type = ValueType::kU8;
  uint64_t count = 0;
  std::vector<std::string> strings;
  std::span<const uint8_t> raw;

  bool is_integer() const;  // any integer type or bool
  bool is_float() const { return type == ValueType::kF32 || type == ValueType::kF64; }
  // Element e of a numeric array (e < count) as int64 / double.
  int64_t int_at(uint64_t e) const;
  double float_at(uint64_t e) const;
};

struct TensorInfo {
  std::string name;
  GgmlType type = GgmlType::kF32;
  uint32_t n_dims = 0;
  int64_t ne[4] = {1, 1, 1, 1};  // ggml order: ne[0] is the innermost (contiguous) dimension
  uint64_t offset = 0;           // relative to the data section
  std::span<const uint8_t> bytes;
  int64_t numel() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  std::string shape_str() const;  // "[576, 49152]" (ggml order)
};

// Move-only: tensor bytes point into the mapping or into `owned`.
class File {
 public:
  File() = default;
  File(File&&) = default;
  File& operator=(File&&) = default;
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  // Maps and parses `path`. Throws nbits::Error "<path>: <problem>".
  static File open(const std::string& path);
  // Parses bytes in memory (copied); errors start with `label`.
  static File parse(std::span<const uint8_t> bytes, const std::string& label = "model.gguf");

  const std::string& label() const { return label_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  const std::vector<std::pair<std::string, Value>>& metadata() const { return kv_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }

  const Value* find(std::string_view key) const;  // nullptr if absent
  const TensorInfo* tensor(std::string_view name) const;

  // Typed metadata getters. Absent keys: nullopt (the *_required forms throw
  // "<file>: missing metadata key 'K'"); present with the wrong type: throw
  // "<file>: metadata key 'K' is <type>, expected <what>".
  std::optional<int64_t> get_int(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;  // integers accepted
  std::optional<std::string> get_string(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;
  int64_t get_int_required(std::string_view key) const;
  // Arrays (nullptr / empty when absent; throw when the element type differs).
  const std::vector<std::string>* get_strings(std::string_view key) const;
  std::vector<double> get_floats(std::string_view key) const;
  std::vector<int64_t> get_ints(std::string_view key) const;

  [[noreturn]] void fail(const std::string& msg) const;  // "<label>: <msg>"

  // Backing storage: keep alive while tensor bytes are used (see llm model synthesis).
  std::shared_ptr<MappedFile> mapping;
  std::vector<uint8_t> owned;

 private:
  void parse_bytes(std::span<const uint8_t> bytes);

  std::string label_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, Value>> kv_;
  std::map<std::string, size_t, std::less<>> kv_index_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace nbits::gguf
