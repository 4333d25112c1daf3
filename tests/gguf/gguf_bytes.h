// Writes small GGUF files byte by byte for the reader tests, remembering where
// each field is so a test can corrupt exactly one of them.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace nbits::gguf::test {

struct GgufBytes {
  std::vector<uint8_t> b;
  std::map<std::string, size_t> at;  // field name -> offset of its first byte

  void mark(const std::string& name) { at[name] = b.size(); }
  template <typename T>
  void put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    b.insert(b.end(), p, p + sizeof(T));
  }
  void str(const std::string& s) {
    put<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
  }
  void key(const std::string& k, uint32_t type) {
    mark("key:" + k);
    str(k);
    mark("type:" + k);
    put<uint32_t>(type);
    mark("value:" + k);
  }
  void pad_to(size_t align) {
    while (b.size() % align) b.push_back(0);
  }
  template <typename T>
  void patch(const std::string& field, T v, size_t extra = 0) {
    std::memcpy(b.data() + at.at(field) + extra, &v, sizeof(T));
  }
};

// A valid v3 file: every metadata value type (arrays of numbers and of
// strings included), alignment 32, two tensors: "a" F32 [8, 2] at 0 and "b"
// Q8_0 [32] at 64; the file ends where b's data ends.
inline GgufBytes small_gguf() {
  GgufBytes g;
  g.b.insert(g.b.end(), {'G', 'G', 'U', 'F'});
  g.mark("version");
  g.put<uint32_t>(3);
  g.mark("n_tensors");
  g.put<uint64_t>(2);
  g.mark("n_kv");
  g.put<uint64_t>(16);
  g.key("general.architecture", 8);
  g.str("llama");
  g.key("general.alignment", 4);
  g.put<uint32_t>(32);
  g.key("t.u8", 0);
  g.put<uint8_t>(200);
  g.key("t.i8", 1);
  g.put<int8_t>(-5);
  g.key("t.u16", 2);
  g.put<uint16_t>(60000);
  g.key("t.i16", 3);
  g.put<int16_t>(-30000);
  g.key("t.i32", 5);
  g.put<int32_t>(-7);
  g.key("t.f32", 6);
  g.put<float>(1.5f);
  g.key("t.bool", 7);
  g.put<uint8_t>(1);
  g.key("t.u64", 10);
  g.put<uint64_t>(1ull << 40);
  g.key("t.i64", 11);
  g.put<int64_t>(-(1ll << 40));
  g.key("t.f64", 12);
  g.put<double>(1e-5);
  g.key("t.floats", 9);
  g.mark("array_type:t.floats");
  g.put<uint32_t>(6);
  g.mark("count:t.floats");
  g.put<uint64_t>(3);
  g.put<float>(1), g.put<float>(2), g.put<float>(3);
  g.key("t.ints", 9);
  g.put<uint32_t>(5);
  g.put<uint64_t>(2);
  g.put<int32_t>(-1), g.put<int32_t>(7);
  g.key("tokenizer.ggml.tokens", 9);
  g.mark("array_type:tokens");
  g.put<uint32_t>(8);
  g.mark("count:tokens");
  g.put<uint64_t>(3);
  g.mark("string0:tokens");
  g.str("a");
  g.str("bc");
  g.str("");
  g.key("t.last", 4);
  g.put<uint32_t>(9);
  // tensors
  g.mark("tensor:a");
  g.str("a");
  g.mark("n_dims:a");
  g.put<uint32_t>(2);
  g.mark("ne:a");
  g.put<uint64_t>(8);
  g.put<uint64_t>(2);
  g.mark("ggml_type:a");
  g.put<uint32_t>(0);
  g.mark("offset:a");
  g.put<uint64_t>(0);
  g.mark("tensor:b");
  g.str("b");
  g.mark("n_dims:b");
  g.put<uint32_t>(1);
  g.mark("ne:b");
  g.put<uint64_t>(32);
  g.mark("ggml_type:b");
  g.put<uint32_t>(8);
  g.mark("offset:b");
  g.put<uint64_t>(64);
  g.mark("infos_end");
  g.pad_to(32);
  g.mark("data");
  for (int i = 0; i < 16; ++i) g.put<float>(static_cast<float>(i));
  g.put<uint16_t>(0x3c00);  // Q8_0 block: d = 1.0
  for (int i = 0; i < 32; ++i) g.put<int8_t>(static_cast<int8_t>(i - 16));
  g.mark("end");
  return g;
}

}  // namespace nbits::gguf::test
