// Memory at load: the file pages of initializers that MatMulNBits packed are let
// go (released_bytes), tables read at run stay mapped (mapped_weight_bytes),
// and the results do not change.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <set>

#include "graph/session.h"
#include "onnx/model.h"
#include "onnx/writer.h"
#include "ops/ops.h"
#include "support/shared_data.h"

namespace nbits::testing {
namespace {

struct Expected {
  size_t packed_sources = 0;  // B, scales, zero points, bias of every MatMulNBits
  size_t read_at_run = 0;     // initializers other nodes read at run time
};

// True when the initializer is viewed in place in a mapped file (the reader copies
// misaligned inline raw_data into owned memory, which has no file pages to let go).
bool in_mapping(const onnx::Model& m, const onnx::Tensor& t) {
  if (m.file && m.file->contains(t.bytes.data(), t.bytes.size())) return true;
  for (const auto& [location, f] : m.external_files)
    if (f->contains(t.bytes.data(), t.bytes.size())) return true;
  return false;
}

Expected expected_bytes(const std::string& path) {
  const onnx::Model m = onnx::load_model(path);
  std::set<std::string> packed, other;
  for (const onnx::Node& n : m.graph.nodes)
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i].empty() || m.graph.initializer(n.inputs[i]) == nullptr) continue;
      (n.op_type == "MatMulNBits" && i > 0 ? packed : other).insert(n.inputs[i]);
    }
  Expected e;
  for (const auto& name : packed)
    if (!other.count(name) && in_mapping(m, *m.graph.initializer(name)))
      e.packed_sources += m.graph.initializer(name)->bytes.size();
  for (const auto& name : other)
    if (in_mapping(m, *m.graph.initializer(name))) e.read_at_run += m.graph.initializer(name)->bytes.size();
  return e;
}

TEST(LoadMemory, PackedInitializersAreReleasedAndTablesStayMapped) {
  for (const char* variant : {"onnx_int4", "onnx_int4_extdata", "onnx_int8_acc0"}) {
    SCOPED_TRACE(variant);
    const std::string path = shared_path(std::string("models/stories260K/") + variant + "/model.onnx");
    NBITS_REQUIRE_SHARED(path);
    const Expected e = expected_bytes(path);
    ASSERT_GT(e.packed_sources, 0u);
    auto s = graph::Session::load(path);
    EXPECT_EQ(s->released_bytes(), e.packed_sources);
    // The embedding table and the norm weights are read from the mapping (when
    // viewed in place); folded constants live in owned memory.
    EXPECT_LE(s->mapped_weight_bytes(), e.read_at_run);
    EXPECT_LE(s->mapped_weight_bytes(), s->weight_bytes());
    if (std::string(variant) == "onnx_int4_extdata") {  // external data is aligned: the 512 x 64 embedding
      EXPECT_GE(s->mapped_weight_bytes(), size_t{512} * 64 * 4);
    }
  }
}

// A tied embedding (Gather + MatMul(h, Transpose(table))) stored inline, its raw_data misaligned
// (protobuf puts it anywhere): a large one stays a view of the file (onnx/model.h) where the ops
// read it bytewise, and the results equal those of the same table aligned.
TEST(LoadMemory, LargeMisalignedTableStaysMappedAndGivesTheSameResults) {
  const int64_t V = 4096, D = 96, S = 3;  // 1.5 MiB of fp32
  std::vector<float> table(static_cast<size_t>(V * D));
  for (size_t i = 0; i < table.size(); ++i)
    table[i] = static_cast<float>((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
  std::vector<uint8_t> bytes(table.size() * 4);
  std::memcpy(bytes.data(), table.data(), bytes.size());
  const std::string dir = ::testing::TempDir();
  // Writes the model with the table named `name` (its length moves the raw_data's offset).
  auto write = [&](const std::string& name) {
    onnx::ModelWriter w;
    w.add_opset("", 17);
    w.add_input("ids", onnx::DataType::kInt64, {onnx::dim_value(1), onnx::dim_value(S)});
    w.add_initializer(name, onnx::DataType::kFloat, {V, D}, std::span<const uint8_t>(bytes));
    w.add_node("Gather", "", "embed", {name, "ids"}, {"h"});
    w.add_node("Transpose", "", "tied", {name}, {"head"}, {onnx::ints_attr("perm", {1, 0})});
    w.add_node("MatMul", "", "lm_head", {"h", "head"}, {"logits"});
    w.add_output("h", onnx::DataType::kFloat, {onnx::dim_value(1), onnx::dim_value(S), onnx::dim_value(D)});
    w.add_output("logits", onnx::DataType::kFloat,
                 {onnx::dim_value(1), onnx::dim_value(S), onnx::dim_value(V)});
    const std::string path = dir + "/tied_" + std::to_string(name.size()) + ".onnx";
    w.save(path);
    return path;
  };
  std::string aligned_path, misaligned_path;
  for (std::string name = "t"; name.size() < 12 && (aligned_path.empty() || misaligned_path.empty());
       name += "x") {
    const std::string path = write(name);
    const onnx::Model m = onnx::load_model(path);
    (m.graph.initializer(name)->aligned() ? aligned_path : misaligned_path) = path;
  }
  ASSERT_FALSE(aligned_path.empty());
  ASSERT_FALSE(misaligned_path.empty());
  {
    const onnx::Model m = onnx::load_model(misaligned_path);
    const onnx::Tensor& t = m.graph.initializers.front();
    EXPECT_TRUE(in_mapping(m, t)) << "a large misaligned raw_data is viewed in place";
  }
  std::vector<int64_t> ids = {5, 4095, 0};
  for (int requantize : {0, 8}) {
    SCOPED_TRACE(requantize);
    graph::SessionOptions o;
    o.requantize_float = requantize;
    std::vector<std::vector<float>> out[2];
    size_t mapped[2] = {0, 0};
    for (int a = 0; a < 2; ++a) {
      auto s = graph::Session::load(a ? misaligned_path : aligned_path, o);
      s->bind_input("ids", graph::Tensor{graph::DType::kI64, graph::Shape{1, S}, ids.data()});
      s->run();
      for (const char* name : {"h", "logits"}) {
        const graph::Tensor& y = s->output(name);
        out[a].emplace_back(y.as<const float>(), y.as<const float>() + y.numel());
      }
      mapped[a] = s->mapped_weight_bytes();
    }
    EXPECT_EQ(out[0], out[1]);
    for (int64_t i = 0; i < S; ++i)  // the Gather's rows, exactly
      for (int64_t d = 0; d < D; ++d)
        ASSERT_EQ(out[1][0][static_cast<size_t>(i * D + d)], table[static_cast<size_t>(ids[i] * D + d)]);
    // The Gather reads the table from the file at run, aligned or not.
    EXPECT_GE(mapped[0], bytes.size());
    // A MatMul packing or re-quantizing B reads it bytewise too: no aligned copy of the table
    // (545 MB for Qwen2.5-0.5B's tied embedding). Where fp32 B is not packed (no SIMD panel
    // kernel), the plain MatMul reads it typed, from an aligned copy.
    if (requantize != 0 || ops::matmul_packs_constant_b(o, graph::DType::kF32)) {
      EXPECT_GE(mapped[1], bytes.size()) << "the misaligned table was copied";
    }
  }
  std::filesystem::remove(aligned_path);
  std::filesystem::remove(misaligned_path);
}

}  // namespace
}  // namespace nbits::testing
