// nbits patch: accuracy_level rewrite that keeps every other byte.
#include "onnx/patch.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "base/error.h"
#include "onnx/model.h"
#include "onnx/writer.h"
#include "onnx_test_util.h"
#include "support/shared_data.h"

namespace nbits::onnx {
namespace {

using nbits::testing::expect_same_model;
using nbits::testing::read_bytes;
using nbits::testing::TempDir;
using nbits::testing::write_bytes;

std::string variant(const std::string& v) {
  return nbits::testing::shared_path("models/stories260K/" + v + "/model.onnx");
}

TEST(OnnxPatch, Acc0PatchedTo4EqualsInt4) {
  NBITS_REQUIRE_SHARED(variant("onnx_int4_acc0"));
  const MappedFile acc0(variant("onnx_int4_acc0"));
  PatchStats stats;
  const std::vector<uint8_t> patched = patch_accuracy_level(acc0.bytes(), 4, &stats);
  EXPECT_EQ(stats.nodes, 26);
  EXPECT_EQ(stats.changed, 26);
  EXPECT_EQ(stats.added, 0);
  const Model int4 = load_model(variant("onnx_int4"));
  const Model m = parse_model(patched);
  expect_same_model(int4, m);
  for (const auto& n : m.graph.nodes)
    if (n.op_type == "MatMulNBits") {
      EXPECT_EQ(n.attr_int("accuracy_level", -1), 4);
    }
  // Only the attribute value changed: same size (0 and 4 are both one-byte varints).
  EXPECT_EQ(patched.size(), acc0.size());
  // And back again: byte-identical to the original file.
  PatchStats back;
  const std::vector<uint8_t> again = patch_accuracy_level(patched, 0, &back);
  EXPECT_EQ(back.changed, 26);
  EXPECT_TRUE(nbits::testing::same_bytes(again, acc0.bytes()));
}

TEST(OnnxPatch, SameLevelIsByteIdentical) {
  NBITS_REQUIRE_SHARED(variant("onnx_int8"));
  const MappedFile f(variant("onnx_int8"));
  PatchStats stats;
  const std::vector<uint8_t> out = patch_accuracy_level(f.bytes(), 4, &stats);
  EXPECT_EQ(stats.nodes, 26);
  EXPECT_EQ(stats.changed, 0);
  EXPECT_TRUE(nbits::testing::same_bytes(out, f.bytes()));
}

TEST(OnnxPatch, AddsMissingAttributeDropsDuplicatesAndLeavesOtherNodes) {
  ModelWriter w;
  w.add_opset("com.microsoft", 1);
  w.add_initializer("B", DataType::kUint8, {4, 1, 16}, std::vector<uint8_t>(64, 0x88));
  w.add_node("MatMulNBits", "com.microsoft", "no_attr", {"a", "B", "S"}, {"y"},
             {int_attr("K", 32), int_attr("N", 4), int_attr("bits", 4), int_attr("block_size", 32)});
  w.add_node("MatMulNBits", "com.microsoft", "dup", {"a", "B", "S"}, {"z"},
             {int_attr("accuracy_level", 1), int_attr("K", 32), int_attr("accuracy_level", 2)});
  w.add_node("MatMulNBits", "other.domain", "foreign", {"a"}, {"w"}, {int_attr("accuracy_level", 1)});
  PatchStats stats;
  const Model m = parse_model(patch_accuracy_level(w.serialize(), 3, &stats));
  EXPECT_EQ(stats.nodes, 2);
  EXPECT_EQ(stats.changed, 2);
  EXPECT_EQ(stats.added, 1);
  const Model orig = parse_model(w.serialize());
  ASSERT_EQ(m.graph.nodes.size(), 3u);
  EXPECT_EQ(m.graph.nodes[0].attr_int("accuracy_level", -1), 3);
  EXPECT_EQ(m.graph.nodes[0].attributes.size(), 5u);
  EXPECT_EQ(m.graph.nodes[1].attr_int("accuracy_level", -1), 3);
  EXPECT_EQ(m.graph.nodes[1].attributes.size(), 2u);
  EXPECT_EQ(m.graph.nodes[2].attr_int("accuracy_level", -1), 1);
  nbits::testing::expect_same_nodes(orig.graph, m.graph, "accuracy_level");
  EXPECT_THROW(patch_accuracy_level(w.serialize(), 5), Error);
  EXPECT_THROW(patch_accuracy_level(std::vector<uint8_t>{0x0a, 0x80}, 4), Error);
}

TEST(OnnxPatch, ExternalDataModelPatchedIntoAnotherDirectory) {
  NBITS_REQUIRE_SHARED(variant("onnx_int4_extdata"));
  TempDir dir;
  const std::string out = dir.file("patched.onnx");
  const PatchStats stats = patch_model_file(variant("onnx_int4_extdata"), out, 0);
  EXPECT_EQ(stats.nodes, 26);
  EXPECT_EQ(stats.changed, 26);
  ASSERT_EQ(stats.linked_files.size(), 1u);
  EXPECT_EQ(stats.linked_files[0], dir.file("model.onnx.data"));
  const Model m = load_model(out);
  expect_same_model(load_model(variant("onnx_int4_extdata")), m, "accuracy_level");
  for (const auto& n : m.graph.nodes)
    if (n.op_type == "MatMulNBits") {
      EXPECT_EQ(n.attr_int("accuracy_level", -1), 0);
    }
  // Patching again into the same place: the data file is already the same file.
  EXPECT_EQ(patch_model_file(variant("onnx_int4_extdata"), out, 4).linked_files.size(), 0u);
}

TEST(OnnxPatch, RefusesToOverwriteInputOrADifferentDataFile) {
  NBITS_REQUIRE_SHARED(variant("onnx_int4_extdata"));
  TempDir dir;
  const std::string in = dir.file("model.onnx");
  std::filesystem::copy_file(variant("onnx_int4_extdata"), in);
  std::filesystem::copy_file(variant("onnx_int4_extdata") + ".data", dir.file("model.onnx.data"));
  EXPECT_THROW(patch_model_file(in, in, 4), Error);
  // Same directory: nothing to place, and the input is untouched.
  const auto before = read_bytes(in);
  const PatchStats same_dir = patch_model_file(in, dir.file("out.onnx"), 0);
  EXPECT_TRUE(same_dir.linked_files.empty());
  EXPECT_EQ(read_bytes(in), before);
  load_model(dir.file("out.onnx"));

  std::filesystem::create_directory(dir.file("sub"));
  write_bytes(dir.file("sub/model.onnx.data"), {1, 2, 3});
  try {
    patch_model_file(in, dir.file("sub/model.onnx"), 0);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--force"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("sub/model.onnx")));
  const PatchStats forced = patch_model_file(in, dir.file("sub/model.onnx"), 0, /*force=*/true);
  EXPECT_EQ(forced.linked_files.size(), 1u);
  expect_same_model(load_model(in), load_model(dir.file("sub/model.onnx")), "accuracy_level");
}

}  // namespace
}  // namespace nbits::onnx
