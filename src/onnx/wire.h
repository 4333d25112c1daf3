// Protobuf wire format: a zero-copy reader over bytes (usually a mapped file) and
// the few encoding helpers the writer, the patcher and the tests need.
// Every read is bounds-checked; malformed input throws nbits::Error with one line
// "<label>: <problem> at offset N" where N is the offset from the buffer start.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nbits::onnx::wire {

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLen = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5
};

const char* wire_type_name(uint32_t t);

// Where errors are reported: a label (file name) and the start of the whole buffer.
struct Source {
  std::string label;
  const uint8_t* base = nullptr;
  size_t size = 0;
  // Throws "<label>: <msg> at offset <p - base>".
  [[noreturn]] void fail_at(const uint8_t* p, const std::string& msg) const;
  [[noreturn]] void fail(const std::string& msg) const;  // "<label>: <msg>"
};

struct Field {
  uint32_t number = 0;
  uint32_t type = 0;
  uint64_t varint = 0;             // kVarint value, or kFixed32/kFixed64 bits
  std::span<const uint8_t> bytes;  // kLen payload
  const uint8_t* start = nullptr;  // first byte of the tag
  const uint8_t* end = nullptr;    // one past the last byte of the field

  std::string_view str() const { return {reinterpret_cast<const char*>(bytes.data()), bytes.size()}; }
};

// Iterates the fields of one message. Unknown fields of every valid wire type are
// returned like the others (callers ignore them); groups, wire types 6/7, field 0
// and any length past the end of the message throw.
class Reader {
 public:
  Reader(const Source& src, std::span<const uint8_t> msg)
      : src_(&src), p_(msg.data()), end_(msg.data() + msg.size()) {}
  bool next(Field& f);  // false at the end of the message
  const Source& source() const { return *src_; }

 private:
  const Source* src_;
  const uint8_t* p_;
  const uint8_t* end_;
};

// Reads one varint at p (< end); advances p. Throws on truncation or > 10 bytes.
uint64_t read_varint(const Source& src, const uint8_t*& p, const uint8_t* end);

// Field value checks with a message naming the field: "<what>: expected wire type X, got Y".
void expect_type(const Source& src, const Field& f, uint32_t type, const char* what);
int32_t as_int32(const Source& src, const Field& f, const char* what);  // varint, must fit int32
int64_t as_int64(const Source& src, const Field& f, const char* what);  // varint as two's complement
float as_float(const Source& src, const Field& f, const char* what);    // fixed32

// Repeated scalars, packed (kLen) or one element (unpacked): appends to out.
void append_int64s(const Source& src, const Field& f, const char* what, std::vector<int64_t>& out);
void append_floats(const Source& src, const Field& f, const char* what, std::vector<float>& out);

// --- encoding ---------------------------------------------------------------
void put_varint(std::vector<uint8_t>& out, uint64_t v);
void put_tag(std::vector<uint8_t>& out, uint32_t field, uint32_t type);
size_t varint_size(uint64_t v);
void put_int_field(std::vector<uint8_t>& out, uint32_t field, int64_t v);  // varint, negatives as 10 bytes
void put_float_field(std::vector<uint8_t>& out, uint32_t field, float v);  // fixed32
void put_bytes_field(std::vector<uint8_t>& out, uint32_t field, std::string_view v);
void put_bytes_field(std::vector<uint8_t>& out, uint32_t field, std::span<const uint8_t> v);
void put_packed_int64s(std::vector<uint8_t>& out, uint32_t field, std::span<const int64_t> v);
void put_packed_floats(std::vector<uint8_t>& out, uint32_t field, std::span<const float> v);

// Printable form of a name for error messages: control bytes escaped, long names cut.
std::string printable(std::string_view s);

}  // namespace nbits::onnx::wire
