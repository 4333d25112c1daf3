// Grouped MatMulNBits on real exports (graph/rewrites.h fuse_matmul_nbits_groups): the same
// model loaded with the groups and with SessionOptions::fuse_matmul_groups = false (what
// NBITS_FUSE_MATMUL_GROUPS=0 gives) produces bitwise the same logits over a prompt and decode
// steps, at 1 and 2 threads, and the fused graph really has the group nodes: one
// MatMulNBitsSiluMul per layer (gate/up), and where the export keeps q/k/v apart (builder
// 0.11.2's Qwen3) one MatMulNBitsGroup per layer. Prints the nodes a decode step runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "llm/generator.h"
#include "support/shared_data.h"

namespace nbits::llm {
namespace {

std::string builder_models() {
  if (const char* e = std::getenv("NBITS_BUILDER_MODELS"); e != nullptr && *e) return e;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "/root") + "/.cache/nbits/builder-models";
}

struct Model {
  std::string name, dir;
  bool separate_qkv;
};

std::vector<Model> models() {
  return {{"stories260K_int4", testing::shared_path("models/stories260K/onnx_int4"), false},
          {"llama_int4", builder_models() + "/llama_int4", false},
          {"llama_int4_acc0", builder_models() + "/llama_int4_acc0", false},  // CompFp32 groups
          {"qwen3_int4_v0.11", builder_models() + "/qwen3_int4_v0.11", true}};
}

std::map<std::string, int> op_counts(const graph::Session& s) {
  std::map<std::string, int> r;
  for (const auto& e : s.profile()) ++r[e.op_type];
  return r;
}

class MatMulGroups : public ::testing::TestWithParam<Model> {};

TEST_P(MatMulGroups, SameLogitsAsSeparateNodes) {
  const Model& m = GetParam();
  NBITS_REQUIRE_SHARED(m.dir + "/genai_config.json");
  const std::vector<int32_t> prompt = {1, 15, 27, 3, 99, 42, 7, 250};
  for (int threads : {1, 2}) {
    graph::SessionOptions on, off;
    on.threads = off.threads = threads;
    on.profile = true;  // kernel names per node
    off.fuse_matmul_groups = false;
    auto fused = Generator::load(m.dir, on, 64);
    auto plain = Generator::load(m.dir, off, 64);
    const auto ops = op_counts(fused->session());
    const auto plain_ops = op_counts(plain->session());
    const int silu = ops.count("MatMulNBitsSiluMul") ? ops.at("MatMulNBitsSiluMul") : 0;
    const int groups = ops.count("MatMulNBitsGroup") ? ops.at("MatMulNBitsGroup") : 0;
    const int plain_silu = plain_ops.count("SiluMul") ? plain_ops.at("SiluMul") : 0;
    EXPECT_GT(silu, 0) << m.name;
    EXPECT_EQ(silu, plain_silu) << m.name << ": every SiluMul over gate/up becomes one node";
    EXPECT_EQ(ops.count("SiluMul"), 0u) << m.name;
    if (m.separate_qkv) {
      EXPECT_EQ(groups, silu) << m.name << ": one q/k/v group per layer";
    }
    EXPECT_EQ(fused->session().matmul_nbits_info().size(), plain->session().matmul_nbits_info().size());
    EXPECT_EQ(fused->session().packed_weight_bytes(), plain->session().packed_weight_bytes());
    if (threads == 1)
      std::printf("[groups] %-18s nodes per step %zu -> %zu (%d MatMulNBitsSiluMul, %d MatMulNBitsGroup)\n",
                  m.name.c_str(), plain->session().profile().size(), fused->session().profile().size(), silu,
                  groups);
    std::vector<int32_t> ids = prompt;
    for (int step = 0; step < 6; ++step) {
      const auto lf = fused->append(ids);
      const std::vector<float> a(lf.begin(), lf.end());
      const auto b = plain->append(ids);
      ASSERT_EQ(a.size(), b.size());
      ASSERT_FALSE(a.empty());
      EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)))
          << m.name << " threads=" << threads << " step " << step;
      ids = {static_cast<int32_t>(std::max_element(a.begin(), a.end()) - a.begin())};
    }
#if defined(NBITS_ARCH_X86)
    // The group nodes took the shared path (A prepared once, one fork/join): kernel names say so.
    for (const auto& e : fused->session().profile())
      if (e.op_type == "MatMulNBitsSiluMul" || e.op_type == "MatMulNBitsGroup") {
        EXPECT_EQ(e.kernel.rfind("group_", 0), 0u) << m.name << " " << e.name << ": " << e.kernel;
      }
#endif
  }
}

INSTANTIATE_TEST_SUITE_P(Exports, MatMulGroups, ::testing::ValuesIn(models()),
                         [](const ::testing::TestParamInfo<Model>& i) {
                           std::string n = i.param.name;
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace nbits::llm
