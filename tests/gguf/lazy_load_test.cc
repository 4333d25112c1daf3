// GGUF loads convert each quantized tensor when the session builds its reader
// (onnx::Model::deferred), not all of them before the first is packed: the load holds one
// converted copy at a time. The copies are exact (to_nbits) and let go once packed, except the
// tables a GatherBlockQuantized reads at run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "gguf/gguf_test_data.h"
#include "gguf/model_builder.h"
#include "gguf/quant_map.h"
#include "graph/session.h"
#include "support/shared_data.h"

namespace nbits::gguf {
namespace {

TEST(GgufLazyLoad, QuantizedWeightsAreMadeWhenTheirReaderIsBuilt) {
  // smollm2: tied table (Gather at run + lm_head); phi3: one tensor split into gate and up rows;
  // qwen3moe: expert tensors.
  for (const std::string& path :
       {test::smollm2_gguf(), test::tiny_model("phi3"), test::tiny_model("qwen3moe")}) {
    SCOPED_TRACE(path);
    NBITS_REQUIRE_SHARED(path);
    GgufModel g = build_model(File::open(path));
    const onnx::Model& m = g.model;
    ASSERT_FALSE(m.deferred.empty());
    std::set<std::string> read_at_run;  // the tables GatherBlockQuantized reads rows of
    std::set<std::string> read;
    for (const onnx::Node& n : m.graph.nodes)
      for (const std::string& in : n.inputs) {
        read.insert(in);
        if (n.op_type == "GatherBlockQuantized") read_at_run.insert(in);
      }
    size_t packed_only = 0;
    for (const auto& [name, make] : m.deferred) {
      const onnx::Tensor* t = m.graph.initializer(name);
      ASSERT_NE(t, nullptr) << name;
      EXPECT_TRUE(t->bytes.empty()) << name << " was made before its reader";
      EXPECT_TRUE(read.count(name)) << name << " has no reader";
      // (the session does not look for buffers under 64 KiB: session_pages.cc release_owned)
      const auto bytes = static_cast<size_t>(onnx::tensor_bytes(t->dtype, t->numel()));
      if (!read_at_run.count(name) && bytes >= (size_t{1} << 16)) packed_only += bytes;
    }
    ASSERT_GT(packed_only, 0u);
    auto s = graph::Session::load(std::move(g.model));
    // Every converted copy a packing reader consumed is freed; the tables read at run stay.
    EXPECT_GE(s->released_bytes(), packed_only);
  }
}

// The bytes made later are to_nbits' conversion of the file's tensor.
TEST(GgufLazyLoad, MadeBytesAreTheConversion) {
  NBITS_REQUIRE_SHARED(test::smollm2_gguf());
  GgufModel g = build_model(File::open(test::smollm2_gguf()));
  const File f = File::open(test::smollm2_gguf());
  const TensorInfo* e = nullptr;
  for (const TensorInfo& t : f.tensors())
    if (t.name == "token_embd.weight") e = &t;
  ASSERT_NE(e, nullptr);
  const NBitsMatrix want = to_nbits(f, *e);
  const size_t deferred = g.model.deferred.size();
  g.model.materialize("token_embd.qweight");
  g.model.materialize("token_embd.scales");
  const onnx::Tensor* codes = g.model.graph.initializer("token_embd.qweight");
  const onnx::Tensor* scales = g.model.graph.initializer("token_embd.scales");
  ASSERT_TRUE(codes != nullptr && scales != nullptr);
  ASSERT_EQ(codes->bytes.size(), want.codes.size());
  EXPECT_TRUE(std::equal(want.codes.begin(), want.codes.end(), codes->bytes.begin()));
  ASSERT_EQ(scales->bytes.size(), want.scales.size() * sizeof(float));
  EXPECT_EQ(std::memcmp(scales->bytes.data(), want.scales.data(), scales->bytes.size()), 0);
  EXPECT_EQ(g.model.deferred.count("token_embd.qweight"), 0u);
  EXPECT_EQ(g.model.deferred.size(), deferred - 2);  // the others still to be made
}

}  // namespace
}  // namespace nbits::gguf
