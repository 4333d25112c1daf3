// Norms, GatherBlockQuantized, shape ops and MatMulNBits bias fusion through
// small written models; malformed models fail at load with one clear line.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>

#include "model_file.h"

namespace nbits::testing {
namespace {

using onnx::DataType;
using onnx::dim_param;
using onnx::dim_value;
using onnx::int_attr;

onnx::ModelWriter writer() {
  onnx::ModelWriter w;
  w.add_opset("", 21);
  w.add_opset("com.microsoft", 1);
  return w;
}

std::vector<float> out_floats(const graph::Session& s, const char* name) {
  const graph::Tensor& t = s.output(name);
  return std::vector<float>(t.as<float>(), t.as<float>() + t.numel());
}

TEST(Norms, SkipSimplifiedLayerNormWithBiasAndSum) {
  const int64_t H = 8;
  auto w = writer();
  w.add_input("x", DataType::kFloat, {dim_value(3), dim_value(H)});
  w.add_input("skip", DataType::kFloat, {dim_value(3), dim_value(H)});
  const auto gamma = random_floats(H, 1), bias = random_floats(H, 2);
  w.add_initializer("gamma", DataType::kFloat, {H}, bytes_of(gamma));
  w.add_initializer("bias", DataType::kFloat, {H}, bytes_of(bias));
  w.add_node("SkipSimplifiedLayerNormalization", "com.microsoft", "sln", {"x", "skip", "gamma", "bias"},
             {"y", "", "", "sum"}, {onnx::float_attr("epsilon", 1e-5f)});
  w.add_node("SimplifiedLayerNormalization", "", "ln", {"sum", "gamma"}, {"y2"},
             {onnx::float_attr("epsilon", 1e-5f)});
  w.add_output("y", DataType::kFloat, {dim_value(3), dim_value(H)});
  w.add_output("sum", DataType::kFloat, {dim_value(3), dim_value(H)});
  w.add_output("y2", DataType::kFloat, {dim_value(3), dim_value(H)});
  auto s = load_written(w);
  auto x = random_floats(3 * H, 3), sk = random_floats(3 * H, 4);
  s->bind_input("x", {graph::DType::kF32, {3, H}, x.data()});
  s->bind_input("skip", {graph::DType::kF32, {3, H}, sk.data()});
  s->run();
  const auto y = out_floats(*s, "y"), sum = out_floats(*s, "sum"), y2 = out_floats(*s, "y2");
  for (int64_t r = 0; r < 3; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < H; ++i) {
      const double v = double(x[r * H + i]) + sk[r * H + i] + bias[i];
      EXPECT_NEAR(sum[r * H + i], v, 1e-6);
      ss += v * v;
    }
    const double inv = 1.0 / std::sqrt(ss / H + 1e-5);
    for (int64_t i = 0; i < H; ++i) {
      EXPECT_NEAR(y[r * H + i], sum[r * H + i] * inv * gamma[i], 1e-5);
      EXPECT_NEAR(y2[r * H + i], y[r * H + i], 1e-5);
    }
  }
}

// 4-bit rows packed two per byte, low nibble first.
std::vector<uint8_t> pack4(const std::vector<int>& q) {
  std::vector<uint8_t> b(q.size() / 2);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = static_cast<uint8_t>((q[2 * i] & 15) | ((q[2 * i + 1] & 15) << 4));
  return b;
}

// mins: nbits' internal input 4 (GGUF Q4_1 / Q4_K tables), fp32 per block, added after the scale.
void check_gbq(DataType dtype, bool zp, bool scales_2d, bool mins = false) {
  const int64_t V = 5, C = 32, block = 16, kb = C / block;
  std::vector<int> q(V * C), zps(V * kb);
  for (size_t i = 0; i < q.size(); ++i)
    q[i] = static_cast<int>((i * 7 + 3) % 16) - (dtype == DataType::kInt4 ? 8 : 0);
  for (size_t i = 0; i < zps.size(); ++i)
    zps[i] = static_cast<int>(i % 16) - (dtype == DataType::kInt4 ? 8 : 0);
  const auto sc = random_floats(V * kb, 5);
  const auto mn = random_floats(V * kb, 6);
  auto w = writer();
  w.add_input("ids", DataType::kInt64, {dim_value(1), dim_param("S")});
  const bool u8 = dtype == DataType::kUint8;
  w.add_initializer("data", dtype, {V, u8 ? C / 2 : C}, pack4(q));
  w.add_initializer("scales", DataType::kFloat,
                    scales_2d ? std::vector<int64_t>{V, kb} : std::vector<int64_t>{V * kb}, bytes_of(sc));
  std::vector<std::string> ins = {"data", "ids", "scales"};
  if (zp) {
    w.add_initializer("zp", dtype, {V, u8 ? kb / 2 : kb}, pack4(zps));
    ins.push_back("zp");
  }
  if (mins) {
    if (!zp) ins.push_back("");
    w.add_initializer("mins", DataType::kFloat, {V * kb}, bytes_of(mn));
    ins.push_back("mins");
  }
  w.add_node("GatherBlockQuantized", "com.microsoft", "gbq", ins, {"emb"},
             {int_attr("bits", 4), int_attr("block_size", block), int_attr("gather_axis", 0),
              int_attr("quantize_axis", 1)});
  w.add_output("emb", DataType::kFloat, {dim_value(1), dim_param("S"), dim_value(C)});
  auto s = load_written(w);
  std::vector<int64_t> ids = {3, -1, 0, 9};  // -1 wraps to V-1, 9 is out of range -> zeros
  s->bind_input("ids", {graph::DType::kI64, {1, 4}, ids.data()});
  s->run();
  const auto e = out_floats(*s, "emb");
  ASSERT_EQ(e.size(), size_t(4 * C));
  const int default_zp = u8 ? 8 : 0;
  for (int i = 0; i < 3; ++i) {
    const int64_t r = ids[i] < 0 ? ids[i] + V : ids[i];
    for (int64_t c = 0; c < C; ++c) {
      const int z = zp ? zps[r * kb + c / block] : default_zp;
      float want = float(q[r * C + c] - z) * sc[r * kb + c / block];
      if (mins) want += mn[r * kb + c / block];
      EXPECT_EQ(e[i * C + c], want) << i << "," << c;
    }
  }
  for (int64_t c = 0; c < C; ++c) EXPECT_EQ(e[3 * C + c], 0.0f);
}

TEST(GatherBlockQuantized, Uint8Packed) { check_gbq(DataType::kUint8, false, false); }
TEST(GatherBlockQuantized, Uint8PackedZeroPoints2dScales) { check_gbq(DataType::kUint8, true, true); }
TEST(GatherBlockQuantized, Int4) { check_gbq(DataType::kInt4, false, true); }
TEST(GatherBlockQuantized, Uint4ZeroPoints) { check_gbq(DataType::kUint4, true, true); }
TEST(GatherBlockQuantized, Uint8PackedZeroPointsAndMins) { check_gbq(DataType::kUint8, true, false, true); }
TEST(GatherBlockQuantized, Uint8PackedMinsWithoutZeroPoints) {
  check_gbq(DataType::kUint8, false, true, true);
}

TEST(ShapeOps, TransposeReshapeSliceConcatShapeReduce) {
  auto w = writer();
  w.add_input("x", DataType::kFloat, {dim_value(2), dim_value(3), dim_value(4)});
  w.add_input("mask", DataType::kInt64, {dim_value(1), dim_param("T")});
  auto i64 = [](std::vector<int64_t> v) { return bytes_of(v); };
  w.add_initializer("shape", DataType::kInt64, {2}, i64({4, -1}));
  w.add_initializer("starts", DataType::kInt64, {1}, i64({1}));
  w.add_initializer("ends", DataType::kInt64, {1}, i64({100}));
  w.add_initializer("axes", DataType::kInt64, {1}, i64({1}));
  w.add_initializer("steps", DataType::kInt64, {1}, i64({2}));
  w.add_initializer("ax0", DataType::kInt64, {1}, i64({0}));
  w.add_initializer("one", DataType::kInt64, {}, i64({1}));
  w.add_node("Transpose", "", "t", {"x"}, {"xt"}, {onnx::ints_attr("perm", {2, 0, 1})});  // [4,2,3]
  w.add_node("Reshape", "", "r", {"xt", "shape"}, {"xr"});                                // [4,6]
  w.add_node("Slice", "", "s", {"xr", "starts", "ends", "axes", "steps"}, {"xs"});        // [4,3]: cols 1,3,5
  w.add_node("Unsqueeze", "", "u", {"xs", "ax0"}, {"xu"});                                // [1,4,3]
  w.add_node("Concat", "", "c", {"xu", "xu"}, {"cat"}, {int_attr("axis", 0)});            // [2,4,3]
  w.add_node("Squeeze", "", "q", {"xu", "ax0"}, {"sq"});                                  // [4,3]
  w.add_node("Shape", "", "sh", {"mask"}, {"msh"});
  w.add_node("Gather", "", "g", {"msh", "one"}, {"T"}, {int_attr("axis", 0)});
  w.add_node("ReduceSum", "", "rs", {"mask", "axes"}, {"msum"}, {int_attr("keepdims", 0)});
  w.add_node("Sub", "", "sub", {"msum", "one"}, {"m1"});
  w.add_node("Cast", "", "cast", {"m1"}, {"m1i"}, {int_attr("to", 6)});
  for (const char* o : {"cat", "sq", "T", "m1i"}) w.add_output(o, DataType::kUndefined, {});
  auto s = load_written(w);
  const auto x = random_floats(24, 9);
  std::vector<int64_t> mask = {1, 1, 0, 1, 1};
  s->bind_input("x", {graph::DType::kF32, {2, 3, 4}, const_cast<float*>(x.data())});
  s->bind_input("mask", {graph::DType::kI64, {1, 5}, mask.data()});
  s->run();
  EXPECT_EQ(s->output("cat").shape, (graph::Shape{2, 4, 3}));
  EXPECT_EQ(s->output("sq").shape, (graph::Shape{4, 3}));
  const auto cat = out_floats(*s, "cat");
  for (int64_t k = 0; k < 4; ++k)
    for (int64_t j = 0; j < 3; ++j) {
      const int64_t flat = 1 + 2 * j, i = flat / 3,
                    jj = flat % 3;  // xr[k, flat] = xt[k, i, jj] = x[i, jj, k]
      EXPECT_EQ(cat[k * 3 + j], x[(i * 3 + jj) * 4 + k]);
      EXPECT_EQ(cat[12 + k * 3 + j], cat[k * 3 + j]);
    }
  EXPECT_EQ(s->output("T").as<int64_t>()[0], 5);
  EXPECT_EQ(s->output("m1i").dtype, graph::DType::kI32);
  EXPECT_EQ(s->output("m1i").as<int32_t>()[0], 3);
}

// A MatMulNBits (K=32, N=4, 4-bit, block 32) model; `mutate` breaks it.
template <typename F>
std::string load_error(F mutate) {
  struct Spec {
    int64_t K = 32, N = 4, bits = 4, block = 32, b_bytes = 4 * 16;
    DataType scales_type = DataType::kFloat;
    bool omit_block = false, dangling = false, unsupported = false, cycle = false;
  } sp;
  mutate(sp);
  auto w = writer();
  w.add_input("a", DataType::kFloat, {dim_value(1), dim_value(sp.K)});
  w.add_initializer("B", DataType::kUint8, {sp.b_bytes}, std::vector<uint8_t>(sp.b_bytes, 0x88));
  const size_t es = sp.scales_type == DataType::kInt64 ? 8 : 4;
  w.add_initializer("S", sp.scales_type, {sp.N}, std::vector<uint8_t>(sp.N * es, 0));
  std::vector<onnx::WriterAttr> at = {int_attr("K", sp.K), int_attr("N", sp.N), int_attr("bits", sp.bits)};
  if (!sp.omit_block) at.push_back(int_attr("block_size", sp.block));
  w.add_node("MatMulNBits", "com.microsoft", "proj",
             {sp.dangling ? "nowhere"
              : sp.cycle  ? "z"
                          : "a",
              "B", "S"},
             {"y"}, at);
  w.add_node(sp.unsupported ? "FancyOp" : "Sigmoid", "", "act", {"y"}, {"z"});
  w.add_output("z", DataType::kFloat, {dim_value(1), dim_value(sp.N)});
  try {
    load_written(w);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Malformed, ValidModelLoads) {
  EXPECT_EQ(load_error([](auto&) {}), "(no error)");
}
TEST(Malformed, MatMulNBitsBSizeMismatch) {
  expect_error(load_error([](auto& s) { s.b_bytes = 60; }), {"proj", "MatMulNBits", "B", "K=32"});
  expect_error(load_error([](auto& s) { s.bits = 8; }), {"proj", "B", "bits=8"});
  expect_error(load_error([](auto& s) { s.block = 16; }), {"proj", "scales", "block_size=16"});
}
TEST(Malformed, DanglingInput) {
  expect_error(load_error([](auto& s) { s.dangling = true; }),
               {"proj", "'nowhere'", "is not produced by any node"});
}
TEST(Malformed, Cycle) {
  expect_error(load_error([](auto& s) { s.cycle = true; }), {"cycle"});
}
TEST(Malformed, UnsupportedOp) {
  expect_error(load_error([](auto& s) { s.unsupported = true; }),
               {"unsupported op 'FancyOp'", "act", "ai.onnx"});
}
TEST(Malformed, MissingAttribute) {
  expect_error(load_error([](auto& s) { s.omit_block = true; }), {"proj", "block_size"});
}
TEST(Malformed, WrongDtypeInitializer) {
  expect_error(load_error([](auto& s) { s.scales_type = DataType::kInt64; }), {"proj", "scales", "int64"});
}

TEST(MatMulNBits, AddOfConstantBiasIsFused) {
  const int64_t K = 32, N = 4;
  auto w = writer();
  w.add_input("a", DataType::kFloat, {dim_value(2), dim_value(K)});
  std::vector<uint8_t> B(N * 16);
  for (size_t i = 0; i < B.size(); ++i) B[i] = static_cast<uint8_t>(i * 37);
  w.add_initializer("B", DataType::kUint8, {N, 1, 16}, B);
  w.add_initializer("S", DataType::kFloat, {N}, bytes_of(std::vector<float>{0.5f, -0.25f, 1.0f, 2.0f}));
  w.add_initializer("bias", DataType::kFloat, {N}, bytes_of(std::vector<float>{1, 2, 3, 4}));
  w.add_node("MatMulNBits", "com.microsoft", "mm", {"a", "B", "S"}, {"y"},
             {int_attr("K", K), int_attr("N", N), int_attr("bits", 4), int_attr("block_size", 32)});
  w.add_node("Add", "", "add", {"y", "bias"}, {"out"});
  w.add_output("out", DataType::kFloat, {dim_value(2), dim_value(N)});
  auto s = load_written(w);
  const auto info = s->matmul_nbits_info();
  ASSERT_EQ(info.size(), 1u);
  EXPECT_TRUE(info[0].bias);
  EXPECT_EQ(s->profile().size(), 1u);  // the Add is gone
  const auto a = random_floats(2 * K, 3);
  s->bind_input("a", {graph::DType::kF32, {2, K}, const_cast<float*>(a.data())});
  s->run();
  const auto y = out_floats(*s, "out");
  const float sc[] = {0.5f, -0.25f, 1.0f, 2.0f}, bias[] = {1, 2, 3, 4};
  for (int64_t m = 0; m < 2; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) {
        const int q = (B[n * 16 + k / 2] >> ((k & 1) * 4)) & 15;
        acc += double(a[m * K + k]) * (q - 8) * sc[n];
      }
      EXPECT_NEAR(y[m * N + n], acc + bias[n], 1e-4);
    }
}

}  // namespace
}  // namespace nbits::testing

namespace nbits::testing {
namespace {

// The SiluMul fusion alone (graph/rewrites.h fuse_matmul_nbits_groups off).
graph::SessionOptions no_groups() {
  graph::SessionOptions o;
  o.fuse_matmul_groups = false;
  return o;
}

// gate/up MatMulNBits on the same input, then Sigmoid/Mul/Mul; `keep_sigmoid`
// also exports the Sigmoid output, which must block the fusion.
std::unique_ptr<graph::Session> swiglu_model(bool keep_sigmoid, bool swap_operands,
                                             const graph::SessionOptions& options = no_groups()) {
  const int64_t K = 32, N = 40;
  auto w = writer();
  w.add_input("a", DataType::kFloat, {dim_value(3), dim_value(K)});
  for (const char* p : {"g", "u"}) {
    std::vector<uint8_t> B(N * 16);
    for (size_t i = 0; i < B.size(); ++i) B[i] = static_cast<uint8_t>(i * (p[0] == 'g' ? 37 : 91) + 5);
    std::vector<float> S(N);
    for (int64_t n = 0; n < N; ++n) S[n] = 0.05f * static_cast<float>(n % 7 + 1) * (p[0] == 'g' ? 1 : -1);
    w.add_initializer(std::string("B") + p, DataType::kUint8, {N, 1, 16}, B);
    w.add_initializer(std::string("S") + p, DataType::kFloat, {N}, bytes_of(S));
    w.add_node("MatMulNBits", "com.microsoft", std::string("mm_") + p,
               {"a", std::string("B") + p, std::string("S") + p}, {p},
               {int_attr("K", K), int_attr("N", N), int_attr("bits", 4), int_attr("block_size", 32)});
  }
  w.add_node("Sigmoid", "", "sig", {"g"}, {"s"});
  w.add_node("Mul", "", "act",
             swap_operands ? std::vector<std::string>{"s", "g"} : std::vector<std::string>{"g", "s"}, {"x"});
  w.add_node("Mul", "", "mlp_mul",
             swap_operands ? std::vector<std::string>{"u", "x"} : std::vector<std::string>{"x", "u"},
             {"out"});
  w.add_output("out", DataType::kFloat, {dim_value(3), dim_value(N)});
  if (keep_sigmoid) w.add_output("s", DataType::kFloat, {dim_value(3), dim_value(N)});
  return load_written(w, options);
}

TEST(SiluMulFusion, SameBitsAsTheUnfusedGraph) {
  const auto a = random_floats(3 * 32, 11);
  for (bool swap : {false, true}) {
    SCOPED_TRACE(swap ? "swapped operands" : "graph order");
    auto fused = swiglu_model(false, swap), plain = swiglu_model(true, swap);
    std::vector<std::string> fused_types, plain_types;
    for (const auto& p : fused->profile()) fused_types.push_back(p.op_type);
    for (const auto& p : plain->profile()) plain_types.push_back(p.op_type);
    EXPECT_EQ(fused_types, (std::vector<std::string>{"MatMulNBits", "MatMulNBits", "SiluMul"}));
    EXPECT_EQ(plain_types.size(), 5u);  // the exported Sigmoid output blocks the fusion
    for (auto* s : {fused.get(), plain.get()}) {
      s->bind_input("a", {graph::DType::kF32, {3, 32}, const_cast<float*>(a.data())});
      s->run();
    }
    const auto y1 = out_floats(*fused, "out"), y2 = out_floats(*plain, "out");
    ASSERT_EQ(y1.size(), y2.size());
    EXPECT_EQ(0, std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)));
    // Not a degenerate all-zero comparison.
    bool nonzero = false;
    for (float v : y1) nonzero = nonzero || v != 0.0f;
    EXPECT_TRUE(nonzero);
  }
}

// gate/up with the SiluMul after them become one MatMulNBitsSiluMul (A quantized once, silu(g) * u
// in the epilogue): bitwise the separate nodes, at accuracy_level 4 (shared int8 A) and 0.
TEST(MatMulNBitsGroups, GateUpSiluMulSameBits) {
  const auto a = random_floats(3 * 32, 12);
  for (int level : {4, 0}) {
    graph::SessionOptions grouped, separate = no_groups();
    grouped.accuracy_level = separate.accuracy_level = level;
    auto fused = swiglu_model(false, false, grouped), plain = swiglu_model(false, false, separate);
    std::vector<std::string> types;
    for (const auto& p : fused->profile()) types.push_back(p.op_type);
    EXPECT_EQ(types, (std::vector<std::string>{"MatMulNBitsSiluMul"}));
    for (auto* s : {fused.get(), plain.get()}) {
      s->bind_input("a", {graph::DType::kF32, {3, 32}, const_cast<float*>(a.data())});
      s->run();
    }
    const auto y1 = out_floats(*fused, "out"), y2 = out_floats(*plain, "out");
    ASSERT_EQ(y1.size(), y2.size());
    EXPECT_EQ(0, std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float))) << "accuracy_level " << level;
    float peak = 0;
    for (float v : y1) peak = std::max(peak, std::fabs(v));
    EXPECT_GT(peak, 0.0f);
    // Each weight still reported, with the group that runs it.
    const auto infos = fused->matmul_nbits_info();
    ASSERT_EQ(infos.size(), 2u);
    EXPECT_EQ(infos[0].node, "mm_g");
    EXPECT_EQ(infos[1].node, "mm_u");
    EXPECT_NE(infos[0].group.find("MatMulNBitsSiluMul"), std::string::npos) << infos[0].group;
  }
}

// The Sigmoid output exported blocks SiluMul: gate and up then form a plain two-output group.
TEST(MatMulNBitsGroups, GateUpWithoutSiluMulFormAGroup) {
  const auto a = random_floats(3 * 32, 14);
  auto fused = swiglu_model(true, false, {}), plain = swiglu_model(true, false);
  std::vector<std::string> types;
  for (const auto& p : fused->profile()) types.push_back(p.op_type);
  EXPECT_EQ(types, (std::vector<std::string>{"MatMulNBitsGroup", "Sigmoid", "Mul", "Mul"}));
  for (auto* s : {fused.get(), plain.get()}) {
    s->bind_input("a", {graph::DType::kF32, {3, 32}, const_cast<float*>(a.data())});
    s->run();
  }
  for (const char* out : {"out", "s"}) {
    const auto y1 = out_floats(*fused, out), y2 = out_floats(*plain, out);
    ASSERT_EQ(y1.size(), y2.size());
    EXPECT_EQ(0, std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float))) << out;
  }
}

// q/k/v-like MatMulNBits on one input (zero points on one, a bias on another, N not a multiple
// of 16) become one MatMulNBitsGroup; a fourth with another block size stays alone.
std::unique_ptr<graph::Session> qkv_model(const graph::SessionOptions& options) {
  const int64_t K = 64;
  const int64_t widths[4] = {40, 24, 24, 16};
  auto w = writer();
  w.add_input("a", DataType::kFloat, {dim_param("rows"), dim_value(K)});
  std::vector<std::string> outs;
  for (int i = 0; i < 4; ++i) {
    const int64_t N = widths[i], block = i == 3 ? 16 : 32, kb = K / block;
    const std::string id = std::to_string(i);
    std::vector<uint8_t> B(static_cast<size_t>(N * kb * block / 2));
    for (size_t j = 0; j < B.size(); ++j) B[j] = static_cast<uint8_t>(j * (29 + 6 * i) + 3);
    const auto S = random_floats(static_cast<size_t>(N * kb), 40 + i);
    w.add_initializer("B" + id, DataType::kUint8, {N, kb, block / 2}, B);
    w.add_initializer("S" + id, DataType::kFloat, {N * kb}, bytes_of(S));
    std::vector<std::string> in = {"a", "B" + id, "S" + id};
    if (i == 0) {
      std::vector<uint8_t> Z(static_cast<size_t>(N * ((kb + 1) / 2)));
      for (size_t j = 0; j < Z.size(); ++j) Z[j] = static_cast<uint8_t>(j * 53 + 17);
      w.add_initializer("Z" + id, DataType::kUint8, {static_cast<int64_t>(Z.size())}, Z);
      in.push_back("Z" + id);
    }
    if (i == 1) {
      w.add_initializer("bias" + id, DataType::kFloat, {N},
                        bytes_of(random_floats(static_cast<size_t>(N), 7)));
      in.resize(5);
      in.push_back("bias" + id);
    }
    w.add_node("MatMulNBits", "com.microsoft", "proj" + id, in, {"y" + id},
               {int_attr("K", K), int_attr("N", N), int_attr("bits", 4), int_attr("block_size", block),
                int_attr("accuracy_level", 4)});
    outs.push_back("y" + id);
  }
  w.add_node("Concat", "", "cat", outs, {"out"}, {int_attr("axis", -1)});
  w.add_output("out", DataType::kFloat, {dim_param("rows"), dim_value(104)});
  return load_written(w, options);
}

TEST(MatMulNBitsGroups, QkvGroupSameBits) {
  const auto a = random_floats(5 * 64, 13);
  for (int threads : {1, 2}) {
    graph::SessionOptions grouped, separate = no_groups();
    grouped.threads = separate.threads = threads;
    auto fused = qkv_model(grouped), plain = qkv_model(separate);
    std::map<std::string, int> types;
    for (const auto& p : fused->profile()) ++types[p.op_type];
    EXPECT_EQ(types,
              (std::map<std::string, int>{{"MatMulNBitsGroup", 1}, {"MatMulNBits", 1}, {"Concat", 1}}));
    EXPECT_EQ(plain->profile().size(), 5u);
    for (const auto rows : {int64_t{5}, int64_t{1}}) {
      for (auto* s : {fused.get(), plain.get()}) {
        s->bind_input("a", {graph::DType::kF32, {rows, 64}, const_cast<float*>(a.data())});
        s->run();
      }
      const auto y1 = out_floats(*fused, "out"), y2 = out_floats(*plain, "out");
      ASSERT_EQ(y1.size(), static_cast<size_t>(rows * 104));
      ASSERT_EQ(y1.size(), y2.size());
      EXPECT_EQ(0, std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float))) << rows << " rows";
    }
    EXPECT_EQ(fused->matmul_nbits_info().size(), 4u);
    EXPECT_EQ(fused->packed_weight_bytes(), plain->packed_weight_bytes());
  }
}

// NBITS_FUSE_MATMUL_GROUPS=0 keeps the nodes apart like the option.
TEST(MatMulNBitsGroups, EnvironmentSwitch) {
  setenv("NBITS_FUSE_MATMUL_GROUPS", "0", 1);
  auto s = qkv_model({});
  unsetenv("NBITS_FUSE_MATMUL_GROUPS");
  EXPECT_EQ(s->profile().size(), 5u);
  EXPECT_EQ(qkv_model({})->profile().size(), 3u);
}

}  // namespace
}  // namespace nbits::testing
