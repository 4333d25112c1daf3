// load_model / parse_model on the stories260K exports and on hand-encoded protobufs.
#include "onnx/model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>

#include "base/error.h"
#include "base/fp16.h"
#include "onnx/wire.h"
#include "onnx_test_util.h"
#include "support/shared_data.h"

namespace nbits::onnx {
namespace {

using nbits::testing::shared_path;

const char* kVariants[] = {"onnx_fp32",           "onnx_int4",         "onnx_int4_acc0", "onnx_int4_asym",
                           "onnx_int4_asym_acc0", "onnx_int4_extdata", "onnx_int8",      "onnx_int8_acc0"};

std::string model_path(const std::string& variant) {
  return shared_path("models/stories260K/" + variant + "/model.onnx");
}

bool points_into(std::span<const uint8_t> b, const MappedFile& f) {
  return b.data() >= f.data() && b.data() + b.size() <= f.data() + f.size();
}

TEST(OnnxModel, EveryStoriesVariantLoadsAndIsWellFormed) {
  for (const char* v : kVariants) {
    SCOPED_TRACE(v);
    const std::string path = model_path(v);
    NBITS_REQUIRE_SHARED(path);
    const Model m = load_model(path);
    EXPECT_GT(m.ir_version, 0);
    EXPECT_GT(m.opset(""), 0);
    EXPECT_EQ(m.opset("ai.onnx"), m.opset(""));
    EXPECT_EQ(m.opset("com.microsoft"), 1);
    EXPECT_EQ(m.opset("no.such.domain"), 0);
    EXPECT_EQ(m.graph.nodes.size(), 65u);  // 5 layers of the genai CPU layout
    EXPECT_FALSE(m.graph.initializers.empty());
    // Every node input is a graph input, an initializer or an earlier node's output.
    std::set<std::string> known;
    for (const auto& i : m.graph.inputs) known.insert(i.name);
    for (const auto& t : m.graph.initializers) {
      known.insert(t.name);
      EXPECT_EQ(static_cast<int64_t>(t.bytes.size()), tensor_bytes(t.dtype, t.numel())) << t.name;
    }
    for (const auto& n : m.graph.nodes) {
      for (size_t i = 0; i < n.inputs.size(); ++i)
        if (n.has_input(i)) {
          EXPECT_TRUE(known.count(n.inputs[i])) << n.op_type << " input " << n.inputs[i];
        }
      for (const auto& o : n.outputs) known.insert(o);
    }
    for (const auto& o : m.graph.outputs) EXPECT_TRUE(known.count(o.name)) << o.name;
    ASSERT_FALSE(m.graph.inputs.empty());
    EXPECT_EQ(m.graph.inputs[0].name, "input_ids");
    EXPECT_EQ(m.graph.inputs[0].elem_type, DataType::kInt64);
    ASSERT_EQ(m.graph.inputs[0].dims.size(), 2u);
    EXPECT_EQ(m.graph.inputs[0].dims[0].param, "batch_size");
    EXPECT_EQ(m.graph.inputs[0].dims[0].value, -1);
  }
}

// MatMulNBits attributes agree with their initializers' shapes: B [N, K/bs, bs*bits/8], scales N*K/bs.
void check_matmul_nbits(const std::string& variant, int64_t bits, int64_t accuracy_level, bool zero_points) {
  SCOPED_TRACE(variant);
  const std::string path = model_path(variant);
  NBITS_REQUIRE_SHARED(path);
  const Model m = load_model(path);
  int count = 0;
  for (const auto& n : m.graph.nodes) {
    EXPECT_NE(n.op_type, "MatMul");
    if (n.op_type != "MatMulNBits") continue;
    ++count;
    EXPECT_EQ(n.domain, "com.microsoft");
    EXPECT_EQ(n.attr_int("bits", 0), bits);
    EXPECT_EQ(n.attr_int("accuracy_level", -1), accuracy_level);
    const int64_t k = n.attr_int_required("K"), nn = n.attr_int_required("N");
    const int64_t bs = n.attr_int_required("block_size");
    EXPECT_EQ(bs, 32);
    const Tensor* b = m.graph.initializer(n.inputs.at(1));
    const Tensor* s = m.graph.initializer(n.inputs.at(2));
    ASSERT_NE(b, nullptr);
    ASSERT_NE(s, nullptr);
    const int64_t blocks = (k + bs - 1) / bs;
    EXPECT_EQ(b->dtype, DataType::kUint8);
    EXPECT_EQ(b->dims, (std::vector<int64_t>{nn, blocks, bs * bits / 8}));
    EXPECT_EQ(s->numel(), nn * blocks);
    EXPECT_EQ(n.has_input(3), zero_points);
    // Weights are never copied: they point into the mapped model file.
    EXPECT_TRUE(points_into(b->bytes, *m.file)) << b->name;
  }
  EXPECT_EQ(count, 26);
}

TEST(OnnxModel, MatMulNBitsAttributesMatchInitializers) {
  check_matmul_nbits("onnx_int4", 4, 4, false);
  check_matmul_nbits("onnx_int4_acc0", 4, 0, false);
  check_matmul_nbits("onnx_int4_asym", 4, 4, true);
  check_matmul_nbits("onnx_int8", 8, 4, false);
  check_matmul_nbits("onnx_int8_acc0", 8, 0, false);
}

TEST(OnnxModel, Fp32VariantUsesPlainMatMul) {
  const std::string path = model_path("onnx_fp32");
  NBITS_REQUIRE_SHARED(path);
  const Model m = load_model(path);
  int matmul = 0;
  for (const auto& n : m.graph.nodes) {
    EXPECT_NE(n.op_type, "MatMulNBits");
    matmul += n.op_type == "MatMul";
  }
  EXPECT_EQ(matmul, 26);
  // fp32 tensors are usable through data<float>(): aligned and finite.
  const Tensor* emb = m.graph.initializer("model.embed_tokens.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(emb->bytes.data()) % alignof(float), 0u);
  for (const auto& t : m.graph.initializers) {
    if (t.dtype != DataType::kFloat) continue;
    for (int64_t i = 0; i < t.numel(); ++i) ASSERT_TRUE(std::isfinite(t.data<float>()[i])) << t.name;
  }
}

TEST(OnnxModel, ExternalDataVariantEqualsInlineVariant) {
  const std::string inline_path = model_path("onnx_int4");
  const std::string ext_path = model_path("onnx_int4_extdata");
  NBITS_REQUIRE_SHARED(inline_path);
  NBITS_REQUIRE_SHARED(ext_path);
  const Model a = load_model(inline_path);
  const Model b = load_model(ext_path);
  nbits::testing::expect_same_model(a, b);
  ASSERT_EQ(b.external_files.size(), 1u);
  const auto& data = *b.external_files.begin()->second;
  EXPECT_EQ(b.external_files.begin()->first, "model.onnx.data");
  // Every weight lives in model.onnx.data (the exporter keeps some tiny tensors inline).
  size_t weights = 0;
  for (const auto& t : b.graph.initializers) {
    if (t.dtype != DataType::kUint8) continue;
    ++weights;
    EXPECT_TRUE(t.external) << t.name;
    EXPECT_TRUE(points_into(t.bytes, data)) << t.name;
  }
  EXPECT_EQ(weights, 26u);
}

TEST(OnnxModel, MissingFileNamesThePath) {
  try {
    load_model("/nonexistent/dir/model.onnx");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/model.onnx"), std::string::npos) << e.what();
  }
}

TEST(OnnxModel, NodeAttributeGettersCheckTypes) {
  Node n;
  n.name = "mm";
  n.op_type = "MatMulNBits";
  Attribute a;
  a.name = "bits";
  a.type = AttrType::kInt;
  a.i = 4;
  n.attributes.push_back(a);
  Attribute f;
  f.name = "eps";
  f.type = AttrType::kFloat;
  f.f = 0.5f;
  n.attributes.push_back(f);
  EXPECT_EQ(n.attr_int("bits", 0), 4);
  EXPECT_EQ(n.attr_int("missing", 7), 7);
  EXPECT_EQ(n.attr_float("eps", 0), 0.5f);
  EXPECT_THROW(n.attr_float("bits", 0), Error);
  EXPECT_THROW(n.attr_ints("eps"), Error);
  EXPECT_TRUE(n.attr_ints("missing").empty());
  try {
    n.attr_int_required("K");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "node 'mm' (MatMulNBits): missing required attribute 'K'");
  }
}

TEST(OnnxModel, DataTypeSizes) {
  EXPECT_EQ(tensor_bytes(DataType::kInt4, 5), 3);
  EXPECT_EQ(tensor_bytes(DataType::kUint4, 4), 2);
  EXPECT_EQ(tensor_bytes(DataType::kFloat16, 3), 6);
  EXPECT_EQ(tensor_bytes(DataType::kInt64, 2), 16);
  EXPECT_EQ(data_type_bits(DataType::kString), 0);
  EXPECT_STREQ(data_type_name(DataType::kBfloat16), "bfloat16");
}

// --- hand-encoded models: typed (non-raw) tensor fields -----------------------

using namespace wire;

std::vector<uint8_t> model_with_initializer(const std::vector<uint8_t>& tensor) {
  std::vector<uint8_t> graph, model;
  put_bytes_field(graph, 5, std::span<const uint8_t>(tensor));
  put_int_field(model, 1, 8);
  put_bytes_field(model, 7, std::span<const uint8_t>(graph));
  return model;
}

std::vector<uint8_t> tensor_header(const std::string& name, DataType dt, std::vector<int64_t> dims,
                                   bool packed) {
  std::vector<uint8_t> t;
  if (packed) {
    put_packed_int64s(t, 1, dims);
  } else {
    for (int64_t d : dims) put_int_field(t, 1, d);
  }
  put_int_field(t, 2, static_cast<int64_t>(dt));
  put_bytes_field(t, 8, name);
  return t;
}

const Tensor& only_initializer(const Model& m) {
  if (m.graph.initializers.size() != 1) fail("expected one initializer");
  return m.graph.initializers[0];
}

TEST(OnnxModel, TypedFieldsDecodePackedAndUnpacked) {
  for (bool packed : {false, true}) {
    SCOPED_TRACE(packed ? "packed" : "unpacked");
    {  // float_data
      auto t = tensor_header("f", DataType::kFloat, {2, 2}, packed);
      const std::vector<float> v = {1.5f, -2.0f, 3.25f, 0.0f};
      if (packed) {
        put_packed_floats(t, 4, v);
      } else {
        for (float x : v) put_float_field(t, 4, x);
      }
      const Model m = parse_model(model_with_initializer(t));
      const Tensor& x = only_initializer(m);
      EXPECT_EQ(x.dims, (std::vector<int64_t>{2, 2}));
      ASSERT_EQ(x.bytes.size(), 16u);
      for (int i = 0; i < 4; ++i) EXPECT_EQ(x.data<float>()[i], v[i]);
    }
    {  // int64_data with negatives
      auto t = tensor_header("i", DataType::kInt64, {3}, packed);
      const std::vector<int64_t> v = {-1, 0, int64_t{1} << 40};
      if (packed) {
        put_packed_int64s(t, 7, v);
      } else {
        for (int64_t x : v) put_int_field(t, 7, x);
      }
      const Model m = parse_model(model_with_initializer(t));
      const Tensor& x = only_initializer(m);
      for (int i = 0; i < 3; ++i) EXPECT_EQ(x.data<int64_t>()[i], v[i]);
    }
    {  // float16 bit patterns in int32_data
      auto t = tensor_header("h", DataType::kFloat16, {2}, packed);
      const std::vector<int64_t> v = {float_to_fp16(1.0f), float_to_fp16(-0.5f)};
      if (packed) {
        put_packed_int64s(t, 5, v);
      } else {
        for (int64_t x : v) put_int_field(t, 5, x);
      }
      const Model m = parse_model(model_with_initializer(t));
      const Tensor& x = only_initializer(m);
      ASSERT_EQ(x.bytes.size(), 4u);
      EXPECT_EQ(fp16_to_float(x.data<uint16_t>()[0]), 1.0f);
      EXPECT_EQ(fp16_to_float(x.data<uint16_t>()[1]), -0.5f);
    }
  }
  {  // int4: one packed pair per int32_data element; 3 elements -> 2 bytes
    auto t = tensor_header("q", DataType::kInt4, {3}, true);
    put_packed_int64s(t, 5, std::vector<int64_t>{0x21, 0x0f});
    const Model m = parse_model(model_with_initializer(t));
    const Tensor& x = only_initializer(m);
    ASSERT_EQ(x.bytes.size(), 2u);
    EXPECT_EQ(x.bytes[0], 0x21);
    EXPECT_EQ(x.bytes[1], 0x0f);
  }
  {  // double_data and uint64_data
    auto t = tensor_header("d", DataType::kDouble, {1}, false);
    double dv = 2.5;
    uint64_t bits;
    std::memcpy(&bits, &dv, 8);
    put_tag(t, 10, kFixed64);
    for (int i = 0; i < 8; ++i) t.push_back(static_cast<uint8_t>(bits >> (8 * i)));
    const Model m = parse_model(model_with_initializer(t));
    EXPECT_EQ(only_initializer(m).data<double>()[0], 2.5);
    auto u = tensor_header("u", DataType::kUint32, {2}, false);
    put_packed_int64s(u, 11, std::vector<int64_t>{7, 0xffffffff});
    const Model mu = parse_model(model_with_initializer(u));
    EXPECT_EQ(only_initializer(mu).data<uint32_t>()[1], 0xffffffffu);
  }
}

TEST(OnnxModel, TypedFieldCountAndKindAreChecked) {
  auto t = tensor_header("few", DataType::kFloat, {3}, false);
  put_packed_floats(t, 4, std::vector<float>{1, 2});
  EXPECT_THROW(parse_model(model_with_initializer(t)), Error);
  auto w = tensor_header("wrong", DataType::kFloat, {1}, false);
  put_int_field(w, 7, 1);  // int64_data for a float tensor
  EXPECT_THROW(parse_model(model_with_initializer(w)), Error);
}

TEST(OnnxModel, UnknownFieldsOfEveryWireTypeAreSkipped) {
  auto t = tensor_header("x", DataType::kUint8, {2}, false);
  put_int_field(t, 99, 5);
  put_float_field(t, 100, 1.0f);
  put_tag(t, 101, kFixed64);
  for (int i = 0; i < 8; ++i) t.push_back(0xee);
  put_bytes_field(t, 102, std::string("junk"));
  put_bytes_field(t, 9, std::string("\x01\x02", 2));
  auto model = model_with_initializer(t);
  put_bytes_field(model, 1234, std::string("unknown model field"));
  const Model m = parse_model(model);
  EXPECT_EQ(only_initializer(m).bytes[1], 2);
}

TEST(OnnxModel, ParseModelCopiesTheCallersBuffer) {
  auto t = tensor_header("x", DataType::kUint8, {3}, false);
  put_bytes_field(t, 9, std::string("abc"));
  auto bytes = model_with_initializer(t);
  const Model m = parse_model(bytes);
  std::fill(bytes.begin(), bytes.end(), 0);
  EXPECT_EQ(only_initializer(m).bytes[2], 'c');
}

TEST(OnnxModel, ParseModelFromMemoryRefusesExternalData) {
  auto t = tensor_header("x", DataType::kUint8, {3}, false);
  std::vector<uint8_t> e;
  put_bytes_field(e, 1, std::string("location"));
  put_bytes_field(e, 2, std::string("w.bin"));
  put_bytes_field(t, 13, std::span<const uint8_t>(e));
  put_int_field(t, 14, 1);
  EXPECT_THROW(parse_model(model_with_initializer(t)), Error);
}

}  // namespace
// Model::deferred: an initializer's bytes made on first use, once; a producer that gives the
// wrong size is an error naming the initializer; names that are not deferred are left alone.
TEST(OnnxModel, DeferredInitializerIsMadeOnceOnFirstUse) {
  Model m;
  Tensor t;
  t.name = "w";
  t.dtype = DataType::kFloat;
  t.dims = {2, 3};
  m.graph.initializers.push_back(t);
  t.name = "bad";
  m.graph.initializers.push_back(t);
  int calls = 0;
  m.deferred["w"] = [&calls] {
    ++calls;
    std::vector<uint8_t> b(24);
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i);
    return b;
  };
  m.deferred["bad"] = [] { return std::vector<uint8_t>(20); };
  EXPECT_TRUE(m.graph.initializer("w")->bytes.empty());
  m.materialize("w");
  m.materialize("w");
  m.materialize("not-deferred");
  EXPECT_EQ(calls, 1);
  const Tensor* w = m.graph.initializer("w");
  ASSERT_EQ(w->bytes.size(), 24u);
  EXPECT_EQ(w->bytes[23], 23);
  EXPECT_EQ(m.deferred.count("w"), 0u);
  try {
    m.materialize("bad");
    ADD_FAILURE() << "a producer of the wrong size was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "initializer 'bad': made 20 bytes, its shape needs 24");
  }
}

}  // namespace nbits::onnx
