// Memory at load: the file pages of initializers that MatMulNBits packed are let
// go (released_bytes), tables read at run stay mapped (mapped_weight_bytes),
// and the results do not change.
#include <gtest/gtest.h>

#include <set>

#include "graph/session.h"
#include "onnx/model.h"
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

}  // namespace
}  // namespace nbits::testing
