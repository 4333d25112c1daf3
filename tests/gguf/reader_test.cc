#include "gguf/reader.h"

#include <gtest/gtest.h>

#include <functional>

#include "base/error.h"
#include "gguf/gguf_bytes.h"

namespace nbits::gguf {
namespace {

using test::GgufBytes;
using test::small_gguf;

TEST(GgufReader, ReadsEveryValueTypeAndTensor) {
  const GgufBytes g = small_gguf();
  const File f = File::parse(g.b, "small.gguf");
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.data_offset(), g.at.at("data"));
  EXPECT_EQ(f.metadata().size(), 16u);
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get_int("t.u8"), 200);
  EXPECT_EQ(f.get_int("t.i8"), -5);
  EXPECT_EQ(f.get_int("t.u16"), 60000);
  EXPECT_EQ(f.get_int("t.i16"), -30000);
  EXPECT_EQ(f.get_int("t.i32"), -7);
  EXPECT_EQ(f.get_float("t.f32"), 1.5);
  EXPECT_EQ(f.get_bool("t.bool"), true);
  EXPECT_EQ(f.get_int("t.u64"), 1ll << 40);
  EXPECT_EQ(f.get_int("t.i64"), -(1ll << 40));
  EXPECT_DOUBLE_EQ(*f.get_float("t.f64"), 1e-5);
  EXPECT_EQ(f.get_float("t.i32"), -7.0);  // integers read as numbers too
  EXPECT_EQ(f.get_floats("t.floats"), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(f.get_ints("t.ints"), (std::vector<int64_t>{-1, 7}));
  ASSERT_NE(f.get_strings("tokenizer.ggml.tokens"), nullptr);
  EXPECT_EQ(*f.get_strings("tokenizer.ggml.tokens"), (std::vector<std::string>{"a", "bc", ""}));
  EXPECT_EQ(f.get_int("absent"), std::nullopt);
  EXPECT_EQ(f.get_strings("absent"), nullptr);

  ASSERT_EQ(f.tensors().size(), 2u);
  const TensorInfo* a = f.tensor("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->type, GgmlType::kF32);
  EXPECT_EQ(a->shape_str(), "[8, 2]");
  EXPECT_EQ(a->numel(), 16);
  ASSERT_EQ(a->bytes.size(), 64u);
  float x;
  std::memcpy(&x, a->bytes.data() + 4 * 5, 4);
  EXPECT_EQ(x, 5.0f);
  const TensorInfo* b = f.tensor("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->type, GgmlType::kQ8_0);
  EXPECT_EQ(b->bytes.size(), 34u);
  EXPECT_EQ(b->bytes.data(), a->bytes.data() + 64);
}

TEST(GgufReader, Version2Reads) {
  GgufBytes g = small_gguf();
  g.patch<uint32_t>("version", 2);
  EXPECT_EQ(File::parse(g.b).version(), 2u);
}

TEST(GgufReader, WrongTypedGettersNameTheKey) {
  const GgufBytes g = small_gguf();
  const File f = File::parse(g.b, "small.gguf");
  auto msg = [](const std::function<void()>& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(msg([&] { (void)f.get_int("general.architecture"); }),
            "small.gguf: metadata 'general.architecture' is string, expected an integer");
  EXPECT_EQ(msg([&] { (void)f.get_strings("t.floats"); }),
            "small.gguf: metadata 't.floats' is array of float32, expected an array of strings");
  EXPECT_EQ(msg([&] { (void)f.get_int_required("llama.block_count"); }),
            "small.gguf: missing metadata key 'llama.block_count'");
}

struct Malformed {
  std::string name;
  std::function<void(GgufBytes&)> mutate;
  std::string expect;  // substring of the error
};

std::vector<Malformed> malformed_cases() {
  std::vector<Malformed> v;
  auto trunc_at = [](const std::string& field, size_t extra = 0) {
    return [field, extra](GgufBytes& g) { g.b.resize(g.at.at(field) + extra); };
  };
  // Truncations at many points: header, keys, values, arrays, strings, tensor infos, data.
  v.push_back({"empty", [](GgufBytes& g) { g.b.clear(); }, "not a GGUF file"});
  v.push_back({"trunc_magic", [](GgufBytes& g) { g.b.resize(3); }, "not a GGUF file"});
  v.push_back({"trunc_version", trunc_at("version", 2), "truncated file reading the version"});
  v.push_back({"trunc_n_tensors", trunc_at("n_tensors", 5), "truncated file reading the tensor count"});
  v.push_back({"trunc_n_kv", trunc_at("n_kv"), "truncated file reading the metadata count"});
  v.push_back(
      {"trunc_key_len", trunc_at("key:general.architecture", 4), "the length of the key of metadata pair 0"});
  v.push_back({"trunc_key", trunc_at("key:t.u8", 9), "length 4 of the key of metadata pair 2 runs past"});
  v.push_back({"trunc_type", trunc_at("type:t.u16", 1), "reading the type of metadata 't.u16'"});
  v.push_back({"trunc_i64", trunc_at("value:t.i64", 7), "reading metadata 't.i64'"});
  v.push_back({"trunc_string_value", trunc_at("value:general.architecture", 10),
               "length 5 of metadata 'general.architecture' runs past the end"});
  v.push_back(
      {"trunc_array_count", trunc_at("count:t.floats", 3), "reading the length of metadata 't.floats'"});
  v.push_back(
      {"trunc_array_data", trunc_at("count:t.floats", 12), "metadata 't.floats' has 3 float32 elements"});
  v.push_back({"trunc_string_array", trunc_at("string0:tokens", 26),
               "the length of string 2 of metadata 'tokenizer.ggml.tokens'"});
  v.push_back({"trunc_tensor_name", trunc_at("tensor:a", 8), "name of tensor 0"});
  v.push_back({"trunc_n_dims", trunc_at("n_dims:a", 2), "the dimension count of tensor 'a'"});
  v.push_back({"trunc_dims", trunc_at("ne:a", 12), "dimension 1 of tensor 'a'"});
  v.push_back({"trunc_tensor_type", trunc_at("ggml_type:b", 1), "the type of tensor 'b'"});
  v.push_back({"trunc_offset", trunc_at("offset:b", 4), "the data offset of tensor 'b'"});
  v.push_back({"trunc_before_data", trunc_at("infos_end"), "past the end of the file"});
  v.push_back({"trunc_data", trunc_at("data", 70), "tensor 'b' data [64, 64+34) past the end of the file"});
  v.push_back({"trunc_last_byte", [](GgufBytes& g) { g.b.pop_back(); }, "tensor 'b' data [64, 64+34)"});
  // Header.
  v.push_back({"wrong_magic", [](GgufBytes& g) { g.b[0] = 'X'; }, "not a GGUF file"});
  v.push_back(
      {"version1", [](GgufBytes& g) { g.patch<uint32_t>("version", 1); }, "GGUF version 1 is not supported"});
  v.push_back(
      {"version4", [](GgufBytes& g) { g.patch<uint32_t>("version", 4); }, "GGUF version 4 is not supported"});
  v.push_back(
      {"version_swapped", [](GgufBytes& g) { g.patch<uint32_t>("version", 0x03000000); }, "byte-swapped"});
  v.push_back(
      {"huge_n_kv", [](GgufBytes& g) { g.patch<uint64_t>("n_kv", ~0ull); }, "of the key of metadata pair"});
  v.push_back({"huge_n_tensors", [](GgufBytes& g) { g.patch<uint64_t>("n_tensors", 1ull << 60); },
               "tensor 2 has an empty name"});
  v.push_back({"more_kv_than_written", [](GgufBytes& g) { g.patch<uint64_t>("n_kv", 17); }, "tensor 0"});
  // Metadata.
  v.push_back({"huge_key_len", [](GgufBytes& g) { g.patch<uint64_t>("key:t.u8", ~0ull); },
               "length 18446744073709551615 of the key of metadata pair 2 runs past the end of the file"});
  v.push_back({"empty_key", [](GgufBytes& g) { g.patch<uint64_t>("key:t.u8", 0); }, "empty key"});
  v.push_back({"huge_string",
               [](GgufBytes& g) { g.patch<uint64_t>("value:general.architecture", 1ull << 62); },
               "of metadata 'general.architecture' runs past the end of the file"});
  v.push_back({"unknown_value_type", [](GgufBytes& g) { g.patch<uint32_t>("type:t.u8", 13); },
               "metadata 't.u8' has unknown value type 13"});
  v.push_back({"unknown_array_type", [](GgufBytes& g) { g.patch<uint32_t>("array_type:t.floats", 77); },
               "unknown element type 77"});
  v.push_back({"array_of_arrays", [](GgufBytes& g) { g.patch<uint32_t>("array_type:t.floats", 9); },
               "array of arrays"});
  v.push_back({"huge_array", [](GgufBytes& g) { g.patch<uint64_t>("count:t.floats", 1ull << 62); },
               "float32 elements, past the end of the file"});
  v.push_back({"huge_string_array", [](GgufBytes& g) { g.patch<uint64_t>("count:tokens", 1ull << 40); },
               "strings, more than the"});
  v.push_back({"duplicate_key", [](GgufBytes& g) { g.patch<char>("key:t.i8", 'u', 10); },
               "duplicate metadata key 't.u8'"});
  v.push_back({"alignment_3", [](GgufBytes& g) { g.patch<uint32_t>("value:general.alignment", 3); },
               "general.alignment 3 is not a power of two"});
  v.push_back({"alignment_0", [](GgufBytes& g) { g.patch<uint32_t>("value:general.alignment", 0); },
               "general.alignment 0 is not a power of two"});
  v.push_back({"alignment_int32", [](GgufBytes& g) { g.patch<uint32_t>("type:general.alignment", 5); },
               "'general.alignment' is int32, expected uint32"});
  // Tensor infos.
  v.push_back({"empty_tensor_name", [](GgufBytes& g) { g.patch<uint64_t>("tensor:a", 0); }, "empty name"});
  v.push_back({"huge_tensor_name", [](GgufBytes& g) { g.patch<uint64_t>("tensor:b", ~0ull >> 1); },
               "of the name of tensor 1 runs past the end"});
  v.push_back(
      {"n_dims_5", [](GgufBytes& g) { g.patch<uint32_t>("n_dims:a", 5); }, "tensor 'a' has 5 dimensions"});
  v.push_back(
      {"n_dims_0", [](GgufBytes& g) { g.patch<uint32_t>("n_dims:a", 0); }, "tensor 'a' has 0 dimensions"});
  v.push_back({"zero_dim", [](GgufBytes& g) { g.patch<uint64_t>("ne:a", 0, 8); },
               "tensor 'a' has a zero dimension 1"});
  v.push_back({"dims_overflow",
               [](GgufBytes& g) { g.patch<uint64_t>("ne:a", 1ull << 62), g.patch<uint64_t>("ne:a", 8, 8); },
               "more elements than int64 can count"});
  v.push_back({"unknown_tensor_type", [](GgufBytes& g) { g.patch<uint32_t>("ggml_type:a", 99); },
               "tensor 'a' has unknown ggml type 99"});
  v.push_back({"removed_tensor_type", [](GgufBytes& g) { g.patch<uint32_t>("ggml_type:a", 4); },
               "unknown ggml type 4"});
  v.push_back({"block_not_dividing", [](GgufBytes& g) { g.patch<uint32_t>("ggml_type:a", 8); },
               "tensor 'a' (Q8_0) has a first dimension 8 that is not a multiple of its block size 32"});
  v.push_back({"misaligned_offset", [](GgufBytes& g) { g.patch<uint64_t>("offset:b", 65); },
               "tensor 'b' data offset 65 is not a multiple of the alignment 32"});
  v.push_back({"offset_past_end", [](GgufBytes& g) { g.patch<uint64_t>("offset:b", 1ull << 40); },
               "tensor 'b' data [1099511627776, 1099511627776+34) past the end of the file"});
  v.push_back(
      {"offset_wraps", [](GgufBytes& g) { g.patch<uint64_t>("offset:b", ~0ull - 31); }, "past the end"});
  v.push_back({"data_past_end", [](GgufBytes& g) { g.patch<uint64_t>("ne:b", 64); },
               "tensor 'b' data [64, 64+68) past the end of the file"});
  v.push_back({"overlap", [](GgufBytes& g) { g.patch<uint64_t>("offset:b", 32); },
               "tensors 'a' [0, 64) and 'b' [32, ...) overlap"});
  v.push_back(
      {"duplicate_tensor", [](GgufBytes& g) { g.patch<char>("tensor:b", 'a', 8); }, "duplicate tensor 'a'"});
  // Each type nbits maps beyond Q4_0/Q4_1/Q8_0/Q4_K/Q5_K/Q6_K: a row that is not a whole number of
  // its blocks, and a row count whose blocks run past the file (type id, block, bytes per block).
  struct NewType {
    const char* name;
    uint32_t id;
    uint64_t block, bytes;
  };
  for (const NewType t :
       {NewType{"Q5_0", 6, 32, 22}, NewType{"Q5_1", 7, 32, 24}, NewType{"Q2_K", 10, 256, 84},
        NewType{"Q3_K", 11, 256, 110}, NewType{"IQ4_NL", 20, 32, 18}, NewType{"IQ4_XS", 23, 256, 136},
        NewType{"TQ1_0", 34, 256, 54}, NewType{"TQ2_0", 35, 256, 66}, NewType{"MXFP4", 39, 32, 17},
        NewType{"NVFP4", 40, 64, 36}}) {
    v.push_back({std::string("block_not_dividing_") + t.name,
                 [t](GgufBytes& g) { g.patch<uint32_t>("ggml_type:a", t.id); },
                 std::string("tensor 'a' (") + t.name +
                     ") has a first dimension 8 that is not a multiple of its "
                     "block size " +
                     std::to_string(t.block)});
    // b holds 34 bytes: enough blocks of t to need more.
    const uint64_t blocks = 34 / t.bytes + 1;
    v.push_back(
        {std::string("data_past_end_") + t.name,
         [t, blocks](GgufBytes& g) {
           g.patch<uint32_t>("ggml_type:b", t.id);
           g.patch<uint64_t>("ne:b", blocks * t.block);
         },
         "tensor 'b' data [64, 64+" + std::to_string(blocks * t.bytes) + ") past the end of the file"});
  }
  return v;
}

TEST(GgufReader, MalformedFilesAreRefusedWithOneLine) {
  const auto cases = malformed_cases();
  ASSERT_GE(cases.size(), 75u);
  for (const Malformed& c : cases) {
    SCOPED_TRACE(c.name);
    GgufBytes g = small_gguf();
    c.mutate(g);
    std::string what;
    try {
      File::parse(g.b, "bad.gguf");
      ADD_FAILURE() << c.name << ": accepted";
      continue;
    } catch (const Error& e) {
      what = e.what();
    }
    EXPECT_NE(what.find(c.expect), std::string::npos) << c.name << ": " << what;
    EXPECT_EQ(what.rfind("bad.gguf: ", 0), 0u) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST(GgufReader, OpenNamesTheFile) {
  try {
    File::open("/nonexistent/model.gguf");
    FAIL() << "opened";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/model.gguf"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nbits::gguf
