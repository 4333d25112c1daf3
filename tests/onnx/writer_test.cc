// ModelWriter: write -> load_model gives back the same structure and bytes.
#include "onnx/writer.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "base/error.h"
#include "onnx/model.h"
#include "onnx_test_util.h"
#include "support/shared_data.h"

namespace nbits::onnx {
namespace {

using nbits::testing::expect_same_model;
using nbits::testing::TempDir;

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 31 + (i >> 8));
  return v;
}

// A small model with every attribute kind, symbolic dims and odd-sized tensors.
ModelWriter small_model(size_t big_bytes = 0) {
  ModelWriter w;
  w.set_producer("writer_test", "1.0");
  w.add_opset("", 21);
  w.add_opset("com.microsoft", 1);
  w.add_input("input_ids", DataType::kInt64, {dim_param("batch_size"), dim_param("sequence_length")});
  w.add_output("logits", DataType::kFloat,
               {dim_param("batch_size"), dim_param("sequence_length"), dim_value(32)});
  w.add_initializer("w_int4", DataType::kInt4, {3, 5}, pattern(8, 1));
  w.add_initializer("w_fp16", DataType::kFloat16, {7}, pattern(14, 2));
  w.add_initializer("w_f32", DataType::kFloat, {2, 3}, pattern(24, 3));
  w.add_initializer("shape", DataType::kInt64, {2}, pattern(16, 4));
  w.add_initializer("empty", DataType::kFloat, {0, 4}, std::vector<uint8_t>{});
  w.add_initializer("scalar", DataType::kFloat, {}, pattern(4, 5));
  if (big_bytes != 0)
    w.add_initializer("big", DataType::kUint8, {static_cast<int64_t>(big_bytes)}, pattern(big_bytes, 6));
  w.add_node("Constant", "", "c0", {}, {"c0_out"},
             {tensor_attr("value", DataType::kInt64, {1}, pattern(8, 7))});
  w.add_node("MatMulNBits", "com.microsoft", "mm", {"x", "w_int4", "", "w_fp16"}, {"y"},
             {int_attr("K", 5), int_attr("N", 3), int_attr("bits", 4), int_attr("accuracy_level", -2)});
  w.add_node(
      "Custom", "my.domain", "", {"y"}, {"z", ""},
      {float_attr("eps", 1e-5f), string_attr("mode", std::string("a\0b", 3)), ints_attr("perm", {0, -2, 1}),
       floats_attr("scales", {0.5f, -1.0f}), strings_attr("names", {"p", "", "q"})});
  return w;
}

TEST(OnnxWriter, SerializeRoundTrips) {
  const ModelWriter w = small_model();
  const Model m = parse_model(w.serialize());
  EXPECT_EQ(m.producer_name, "writer_test");
  EXPECT_EQ(m.producer_version, "1.0");
  EXPECT_EQ(m.opset("com.microsoft"), 1);
  ASSERT_EQ(m.graph.nodes.size(), 3u);
  const Node& c = m.graph.nodes[2];
  EXPECT_EQ(c.domain, "my.domain");
  EXPECT_EQ(c.outputs, (std::vector<std::string>{"z", ""}));
  EXPECT_EQ(c.attr_string("mode", ""), std::string("a\0b", 3));
  EXPECT_EQ(c.attr_ints("perm"), (std::vector<int64_t>{0, -2, 1}));
  EXPECT_EQ(c.attr("names")->strings, (std::vector<std::string>{"p", "", "q"}));
  EXPECT_EQ(c.attr("scales")->floats, (std::vector<float>{0.5f, -1.0f}));
  EXPECT_FLOAT_EQ(c.attr_float("eps", 0), 1e-5f);
  EXPECT_EQ(m.graph.nodes[1].attr_int("accuracy_level", 0), -2);
  ASSERT_TRUE(m.graph.nodes[0].attr("value")->t.has_value());
  EXPECT_TRUE(nbits::testing::same_bytes(m.graph.nodes[0].attr("value")->t->bytes, pattern(8, 7)));
  const Tensor* q = m.graph.initializer("w_int4");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->dtype, DataType::kInt4);
  EXPECT_TRUE(nbits::testing::same_bytes(q->bytes, pattern(8, 1)));
  EXPECT_EQ(m.graph.initializer("scalar")->numel(), 1);
  EXPECT_EQ(m.graph.initializer("empty")->bytes.size(), 0u);
  ASSERT_EQ(m.graph.outputs.size(), 1u);
  EXPECT_EQ(m.graph.outputs[0].dims[2].value, 32);
  EXPECT_EQ(m.graph.outputs[0].dims[1].param, "sequence_length");
}

TEST(OnnxWriter, SaveInlineAndExternalLoadTheSame) {
  TempDir dir;
  const size_t big = (size_t{1} << 20) + 3;  // > 1 MiB: aligned to 64 KiB in the data file
  const ModelWriter w = small_model(big);
  const Model reference = parse_model(w.serialize());
  w.save(dir.file("inline.onnx"));
  EXPECT_FALSE(std::filesystem::exists(dir.file("inline.onnx.data")));
  const Model a = load_model(dir.file("inline.onnx"));
  expect_same_model(reference, a);
  for (const auto& t : a.graph.initializers) EXPECT_FALSE(t.external);

  w.save(dir.file("ext.onnx"), /*external_data=*/true);
  const Model b = load_model(dir.file("ext.onnx"));
  expect_same_model(reference, b);
  ASSERT_EQ(b.external_files.count("ext.onnx.data"), 1u);
  const MappedFile& data = *b.external_files.at("ext.onnx.data");
  // Sorted by size: the big tensor is last, on a 64 KiB boundary; nothing stays inline.
  uint64_t big_offset = 0;
  for (const auto& t : b.graph.initializers) {
    EXPECT_TRUE(t.external) << t.name;
    if (t.name == "big") big_offset = static_cast<uint64_t>(t.bytes.data() - data.data());
  }
  EXPECT_EQ(big_offset % 65536, 0u);
  EXPECT_GT(big_offset, 0u);
  EXPECT_EQ(data.size(), big_offset + big);
  EXPECT_LT(std::filesystem::file_size(dir.file("ext.onnx")), 4096u);
}

TEST(OnnxWriter, ThresholdKeepsSmallTensorsInline) {
  TempDir dir;
  const ModelWriter w = small_model();
  w.save(dir.file("m.onnx"), true, /*threshold=*/16);
  const Model m = load_model(dir.file("m.onnx"));
  for (const auto& t : m.graph.initializers) EXPECT_EQ(t.external, t.bytes.size() >= 16) << t.name;
  expect_same_model(parse_model(w.serialize()), m);
}

TEST(OnnxWriter, RejectsInconsistentInitializers) {
  ModelWriter w;
  EXPECT_THROW(w.add_initializer("a", DataType::kFloat, {2}, std::vector<uint8_t>(7)), Error);
  EXPECT_THROW(w.add_initializer("b", DataType::kString, {1}, std::vector<uint8_t>(1)), Error);
  EXPECT_THROW(w.add_initializer("c", DataType::kUint8, {-1}, std::vector<uint8_t>{}), Error);
  EXPECT_THROW(w.add_initializer("", DataType::kUint8, {1}, std::vector<uint8_t>(1)), Error);
  EXPECT_THROW(
      w.add_initializer("d", DataType::kUint8, {int64_t{1} << 40, int64_t{1} << 40}, std::vector<uint8_t>{}),
      Error);
  w.add_initializer("e", DataType::kUint8, {1}, std::vector<uint8_t>(1));
  EXPECT_THROW(w.add_initializer("e", DataType::kUint8, {1}, std::vector<uint8_t>(1)), Error);
  EXPECT_THROW(w.save("/nonexistent/dir/m.onnx"), Error);
}

TEST(OnnxWriter, RewritesEveryStoriesVariantIdentically) {
  for (const char* v : {"onnx_int4", "onnx_int4_asym", "onnx_int8", "onnx_fp32", "onnx_int4_extdata"}) {
    SCOPED_TRACE(v);
    const std::string path =
        nbits::testing::shared_path(std::string("models/stories260K/") + v + "/model.onnx");
    NBITS_REQUIRE_SHARED(path);
    const Model src = load_model(path);
    const ModelWriter w = writer_from_model(src);
    expect_same_model(src, parse_model(w.serialize()));
    TempDir dir;
    w.save(dir.file("model.onnx"), true);
    expect_same_model(src, load_model(dir.file("model.onnx")));
  }
}

}  // namespace
}  // namespace nbits::onnx
