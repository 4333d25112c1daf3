#include "onnx/wire.h"

#include <cstring>
#include <limits>

#include "base/error.h"

namespace nbits::onnx::wire {

const char* wire_type_name(uint32_t t) {
  switch (t) {
    case kVarint:
      return "varint";
    case kFixed64:
      return "fixed64";
    case kLen:
      return "length-delimited";
    case kStartGroup:
      return "start-group";
    case kEndGroup:
      return "end-group";
    case kFixed32:
      return "fixed32";
    default:
      return "invalid";
  }
}

void Source::fail_at(const uint8_t* p, const std::string& msg) const {
  const size_t off = (p != nullptr && base != nullptr && p >= base) ? static_cast<size_t>(p - base) : 0;
  nbits::fail(label, ": ", msg, " at offset ", off);
}

void Source::fail(const std::string& msg) const { nbits::fail(label, ": ", msg); }

uint64_t read_varint(const Source& src, const uint8_t*& p, const uint8_t* end) {
  const uint8_t* start = p;
  uint64_t v = 0;
  for (int i = 0; i < 10; ++i) {
    if (p >= end) src.fail_at(start, "truncated varint");
    const uint8_t b = *p++;
    if (i == 9 && b > 1) src.fail_at(start, "varint overflows 64 bits");
    v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) return v;
  }
  src.fail_at(start, "varint longer than 10 bytes");
}

bool Reader::next(Field& f) {
  if (p_ >= end_) return false;
  f.start = p_;
  const uint64_t tag = read_varint(*src_, p_, end_);
  f.type = static_cast<uint32_t>(tag & 7);
  const uint64_t number = tag >> 3;
  if (number == 0 || number > 0x1fffffff)
    src_->fail_at(f.start, "invalid field number " + std::to_string(number));
  f.number = static_cast<uint32_t>(number);
  f.varint = 0;
  f.bytes = {};
  const size_t left = static_cast<size_t>(end_ - p_);
  switch (f.type) {
    case kVarint:
      f.varint = read_varint(*src_, p_, end_);
      break;
    case kFixed64:
      if (left < 8) src_->fail_at(f.start, "truncated fixed64 field " + std::to_string(f.number));
      std::memcpy(&f.varint, p_, 8);
      p_ += 8;
      break;
    case kFixed32: {
      if (left < 4) src_->fail_at(f.start, "truncated fixed32 field " + std::to_string(f.number));
      uint32_t v;
      std::memcpy(&v, p_, 4);
      f.varint = v;
      p_ += 4;
      break;
    }
    case kLen: {
      const uint64_t n = read_varint(*src_, p_, end_);
      const size_t remain = static_cast<size_t>(end_ - p_);
      if (n > remain) {
        src_->fail_at(f.start, "field " + std::to_string(f.number) + " length " + std::to_string(n) +
                                   " is past the end of its message (" + std::to_string(remain) +
                                   " bytes left)");
      }
      f.bytes = {p_, static_cast<size_t>(n)};
      p_ += n;
      break;
    }
    case kStartGroup:
    case kEndGroup:
      src_->fail_at(f.start, "field " + std::to_string(f.number) + " uses protobuf groups (unsupported)");
    default:
      src_->fail_at(f.start,
                    "field " + std::to_string(f.number) + " has invalid wire type " + std::to_string(f.type));
  }
  f.end = p_;
  return true;
}

void expect_type(const Source& src, const Field& f, uint32_t type, const char* what) {
  if (f.type != type) {
    src.fail_at(f.start, std::string(what) + ": expected wire type " + wire_type_name(type) + ", got " +
                             wire_type_name(f.type));
  }
}

int64_t as_int64(const Source& src, const Field& f, const char* what) {
  expect_type(src, f, kVarint, what);
  return static_cast<int64_t>(f.varint);
}

int32_t as_int32(const Source& src, const Field& f, const char* what) {
  const int64_t v = as_int64(src, f, what);
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
    src.fail_at(f.start, std::string(what) + ": value " + std::to_string(v) + " does not fit int32");
  return static_cast<int32_t>(v);
}

float as_float(const Source& src, const Field& f, const char* what) {
  expect_type(src, f, kFixed32, what);
  const uint32_t bits = static_cast<uint32_t>(f.varint);
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

void append_int64s(const Source& src, const Field& f, const char* what, std::vector<int64_t>& out) {
  if (f.type == kVarint) {
    out.push_back(static_cast<int64_t>(f.varint));
    return;
  }
  expect_type(src, f, kLen, what);
  const uint8_t* p = f.bytes.data();
  const uint8_t* end = p + f.bytes.size();
  // Each varint takes at least one byte: reserve at most the payload size.
  out.reserve(out.size() + f.bytes.size() / 2 + 1);
  while (p < end) out.push_back(static_cast<int64_t>(read_varint(src, p, end)));
}

void append_floats(const Source& src, const Field& f, const char* what, std::vector<float>& out) {
  if (f.type == kFixed32) {
    out.push_back(as_float(src, f, what));
    return;
  }
  expect_type(src, f, kLen, what);
  if (f.bytes.size() % 4 != 0)
    src.fail_at(f.start, std::string(what) + ": packed floats of " + std::to_string(f.bytes.size()) +
                             " bytes (not a multiple of 4)");
  const size_t n = f.bytes.size() / 4;
  const size_t old = out.size();
  out.resize(old + n);
  if (n != 0) std::memcpy(out.data() + old, f.bytes.data(), n * 4);
}

// --- encoding ---------------------------------------------------------------

void put_varint(std::vector<uint8_t>& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<uint8_t>(v));
}

size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

void put_tag(std::vector<uint8_t>& out, uint32_t field, uint32_t type) {
  put_varint(out, (static_cast<uint64_t>(field) << 3) | type);
}

void put_int_field(std::vector<uint8_t>& out, uint32_t field, int64_t v) {
  put_tag(out, field, kVarint);
  put_varint(out, static_cast<uint64_t>(v));
}

void put_float_field(std::vector<uint8_t>& out, uint32_t field, float v) {
  put_tag(out, field, kFixed32);
  uint8_t b[4];
  std::memcpy(b, &v, 4);
  out.insert(out.end(), b, b + 4);
}

void put_bytes_field(std::vector<uint8_t>& out, uint32_t field, std::string_view v) {
  put_tag(out, field, kLen);
  put_varint(out, v.size());
  out.insert(out.end(), v.begin(), v.end());
}

void put_bytes_field(std::vector<uint8_t>& out, uint32_t field, std::span<const uint8_t> v) {
  put_tag(out, field, kLen);
  put_varint(out, v.size());
  out.insert(out.end(), v.begin(), v.end());
}

void put_packed_int64s(std::vector<uint8_t>& out, uint32_t field, std::span<const int64_t> v) {
  size_t n = 0;
  for (int64_t x : v) n += varint_size(static_cast<uint64_t>(x));
  put_tag(out, field, kLen);
  put_varint(out, n);
  for (int64_t x : v) put_varint(out, static_cast<uint64_t>(x));
}

void put_packed_floats(std::vector<uint8_t>& out, uint32_t field, std::span<const float> v) {
  put_tag(out, field, kLen);
  put_varint(out, v.size() * 4);
  const size_t old = out.size();
  out.resize(old + v.size() * 4);
  if (!v.empty()) std::memcpy(out.data() + old, v.data(), v.size() * 4);
}

std::string printable(std::string_view s) {
  std::string r;
  const size_t limit = 96;
  for (size_t i = 0; i < s.size() && i < limit; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) {
      static const char* hex = "0123456789abcdef";
      r += "\\x";
      r += hex[c >> 4];
      r += hex[c & 15];
    } else {
      r += static_cast<char>(c);
    }
  }
  if (s.size() > limit) r += "...";
  return r;
}

}  // namespace nbits::onnx::wire
