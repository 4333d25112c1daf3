// make-model: quantizer formulas by hand, the graph it writes, and (when the
// peers are installed: bash bench/peers/install.sh) ONNX Runtime 1.30 agreeing
// with nbits on the logits of the same file.
#include "modelgen/make_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "llm/generator.h"
#include "modelgen/weights.h"
#include "onnx/model.h"
#include "support/shared_data.h"
#include "support/source_dir.h"

namespace nbits::modelgen {
namespace {

namespace fs = std::filesystem;

TEST(Quantize, SymmetricInt4ByHand) {
  // 32 values k/4 for k in -8..7 (twice): m = -2 (largest magnitude), scale = -2/-8 = 0.25.
  std::vector<float> row(32);
  for (int j = 0; j < 32; ++j) row[j] = static_cast<float>(j % 16 - 8) * 0.25f;
  uint8_t codes[16];
  float scale = 0;
  quantize_row(row.data(), 32, QuantSpec{}, codes, &scale, nullptr);
  EXPECT_EQ(scale, 0.25f);
  for (int j = 0; j < 32; ++j) {
    const int c = (codes[j / 2] >> ((j & 1) * 4)) & 15;  // element 2j low nibble, 2j+1 high
    EXPECT_EQ(c, j % 16) << j;
  }
  // Positive dominant value: the scale is negative and that value gets code 0.
  std::vector<float> pos = {1.0f, 0.5f, -0.25f};
  pos.resize(32, 0.0f);
  quantize_row(pos.data(), 32, QuantSpec{}, codes, &scale, nullptr);
  EXPECT_EQ(scale, -0.125f);
  EXPECT_EQ(codes[0] & 15, 0);   // 1.0 / -0.125 + 8 = 0
  EXPECT_EQ(codes[0] >> 4, 4);   // 0.5 -> -4 + 8
  EXPECT_EQ(codes[1] & 15, 10);  // -0.25 -> 2 + 8
  EXPECT_EQ(codes[1] >> 4, 8);   // 0 -> zero point
}

TEST(Quantize, AsymmetricAndPaddingByHand) {
  // K = 20 with block 16: two blocks, the second padded with 12 zeros.
  std::vector<float> row(20);
  for (int j = 0; j < 16; ++j) row[j] = -1.5f + 0.25f * static_cast<float>(j);  // -1.5 .. 2.25
  for (int j = 16; j < 20; ++j) row[j] = 0.5f;
  QuantSpec q;
  q.block = 16;
  q.asym = true;
  uint8_t codes[16], zp[1];
  float scales[2];
  quantize_row(row.data(), 20, q, codes, scales, zp);
  EXPECT_EQ(scales[0], 0.25f);  // (2.25 - -1.5) / 15
  EXPECT_EQ(zp[0] & 15, 6);     // round(1.5 / 0.25)
  for (int j = 0; j < 16; ++j) EXPECT_EQ((codes[j / 2] >> ((j & 1) * 4)) & 15, j) << j;
  // Block 1: min 0 (padding), max 0.5 -> scale 0.5/15, zp 0; padded slots hold the zero point.
  EXPECT_FLOAT_EQ(scales[1], 0.5f / 15.0f);
  EXPECT_EQ(zp[0] >> 4, 0);
  EXPECT_EQ(codes[8] & 15, 15);
  EXPECT_EQ(codes[15] >> 4, 0);
}

ModelShape tiny_shape() {
  ModelShape s;
  s.hidden = 64, s.layers = 2, s.heads = 4, s.kv_heads = 2, s.head_size = 16, s.intermediate = 96;
  s.vocab = 300, s.context = 64, s.rope_theta = 10000.0f, s.rms_eps = 1e-5f, s.qkv_bias = true, s.tied = true;
  s.type = "qwen2";
  return s;
}

std::string make_tiny(const std::string& name, const QuantSpec& q, EmbeddingMode emb) {
  MakeModelOptions o;
  o.shape = tiny_shape();
  o.quant = q;
  o.embedding = emb;
  o.seed = 7;
  o.out_dir = (fs::temp_directory_path() / ("nbits_modelgen_" + name)).string();
  fs::remove_all(o.out_dir);
  make_model(o);
  return o.out_dir;
}

TEST(MakeModel, WritesTheGenaiGraph) {
  QuantSpec q;
  q.block = 16;
  const std::string dir = make_tiny("graph", q, EmbeddingMode::kGather);
  ASSERT_TRUE(file_exists(dir + "/model.onnx.data"));
  ASSERT_TRUE(file_exists(dir + "/genai_config.json"));
  const onnx::Model m = onnx::load_model(dir + "/model.onnx");
  std::map<std::string, int> ops;
  for (const auto& n : m.graph.nodes) ops[n.op_type]++;
  EXPECT_EQ(ops["MatMulNBits"], 2 * 5 + 1);
  EXPECT_EQ(ops["GroupQueryAttention"], 2);
  EXPECT_EQ(ops["SkipSimplifiedLayerNormalization"], 2 * 2);
  EXPECT_EQ(ops["SimplifiedLayerNormalization"], 1);
  EXPECT_EQ(ops["Add"], 2);     // qkv bias
  EXPECT_EQ(ops["Gather"], 2);  // embedding + Shape->Gather
  EXPECT_EQ(ops["ReduceSum"], 1);
  EXPECT_EQ(m.graph.inputs.size(), 2u + 4u);
  EXPECT_EQ(m.graph.outputs.size(), 1u + 4u);
  const auto* qkv = m.graph.initializer("model.layers.1.attn.qkv_proj.MatMul.weight_Q4");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->dims, (std::vector<int64_t>{(4 + 2 * 2) * 16, 4, 8}));
  EXPECT_TRUE(qkv->external);
  const auto* cos = m.graph.initializer("cos_cache");
  ASSERT_NE(cos, nullptr);
  EXPECT_EQ(cos->dims, (std::vector<int64_t>{64, 8}));
  EXPECT_FLOAT_EQ(cos->data<float>()[8 * 3 + 1], std::cos(3.0f / std::pow(10000.0f, 2.0f / 16.0f)));
  for (const auto& n : m.graph.nodes)
    if (n.op_type == "MatMulNBits") {
      EXPECT_EQ(n.attr_int("accuracy_level", 0), 4) << n.name;
      EXPECT_EQ(n.attr_int("block_size", 0), 16) << n.name;
    }
  const auto cfg = nlohmann::json::parse(read_text_file(dir + "/genai_config.json"));
  EXPECT_EQ(cfg["model"]["decoder"]["num_key_value_heads"], 2);
  EXPECT_EQ(cfg["model"]["type"], "qwen2");
  EXPECT_TRUE(cfg["search"]["past_present_share_buffer"].get<bool>());
}

TEST(MakeModel, RejectsBadOptions) {
  MakeModelOptions o;
  o.shape = tiny_shape();
  o.out_dir = (fs::temp_directory_path() / "nbits_modelgen_bad").string();
  o.quant.bits = 3;
  EXPECT_THROW(make_model(o), Error);
  o.quant.bits = 4;
  o.shape.tied = false;
  o.embedding = EmbeddingMode::kShared;
  EXPECT_THROW(make_model(o), Error);
}

std::vector<std::vector<float>> nbits_logits(const std::string& dir, const std::vector<int32_t>& ids,
                                             const std::vector<int32_t>& steps) {
  graph::SessionOptions so;
  so.threads = 1;
  auto gen = llm::Generator::load(dir, so, 64);
  std::vector<std::vector<float>> rows;
  auto l = gen->append(ids);
  rows.emplace_back(l.begin(), l.end());
  for (int32_t id : steps) {
    auto s = gen->append(std::span<const int32_t>(&id, 1));
    rows.emplace_back(s.begin(), s.end());
  }
  return rows;
}

bool ort_available() {
  const std::string src = nbits::testing::source_dir();
  return file_exists(src + "/bench/peers/.deps/node_modules/onnxruntime-node/package.json") &&
         std::system("node --version > /dev/null 2>&1") == 0;
}

std::vector<std::vector<float>> ort_logits(const std::string& dir, const std::string& ids,
                                           const std::string& steps) {
  const std::string cmd = std::string("node ") + nbits::testing::source_dir() +
                          "/bench/peers/ort_logits.mjs " + dir + " --ids " + ids + " --steps " + steps;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {};
  std::string out;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  if (pclose(p) != 0) return {};
  return nlohmann::json::parse(out)["logits"].get<std::vector<std::vector<float>>>();
}

void expect_same_logits(const std::string& dir) {
  const auto ours = nbits_logits(dir, {1, 17, 42, 299, 5}, {7, 250});
  for (const auto& row : ours)
    for (float v : row) ASSERT_TRUE(std::isfinite(v));
  if (!ort_available()) {
    if (testing::in_ci()) FAIL() << "ONNX Runtime not installed: run bash bench/peers/install.sh";
    GTEST_SKIP() << "ONNX Runtime not installed (bash bench/peers/install.sh); nbits side ran";
  }
  const auto theirs = ort_logits(dir, "1,17,42,299,5", "7,250");
  ASSERT_EQ(theirs.size(), ours.size()) << "ort_logits.mjs failed on " << dir;
  for (size_t r = 0; r < ours.size(); ++r) {
    ASSERT_EQ(theirs[r].size(), ours[r].size());
    float max_abs = 0, max_diff = 0;
    for (size_t i = 0; i < ours[r].size(); ++i) {
      max_abs = std::max(max_abs, std::fabs(theirs[r][i]));
      max_diff = std::max(max_diff, std::fabs(theirs[r][i] - ours[r][i]));
    }
    EXPECT_GT(max_abs, 1e-3f);  // not all zeros
    EXPECT_LE(max_diff, 1e-3f + 1e-2f * max_abs) << dir << " row " << r;
    const auto am = [](const std::vector<float>& v) {
      return std::max_element(v.begin(), v.end()) - v.begin();
    };
    EXPECT_EQ(am(ours[r]), am(theirs[r])) << dir << " row " << r;
  }
}

TEST(MakeModel, MatchesOnnxRuntimeInt4Gather) {
  expect_same_logits(make_tiny("ort_int4", QuantSpec{}, EmbeddingMode::kGather));
}

TEST(MakeModel, MatchesOnnxRuntimeInt8AsymShared) {
  QuantSpec q;
  q.bits = 8;
  q.block = 16;
  q.asym = true;
  expect_same_logits(make_tiny("ort_int8_asym_shared", q, EmbeddingMode::kShared));
}

TEST(MakeModel, MatchesOnnxRuntimeInt4AsymSharedAccuracy0) {
  QuantSpec q;
  q.asym = true;
  q.accuracy_level = 0;
  expect_same_logits(make_tiny("ort_int4_asym_acc0", q, EmbeddingMode::kShared));
}

}  // namespace
}  // namespace nbits::modelgen
