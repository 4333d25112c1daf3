// Load-time fusions of plain-op (Optimum / torch.onnx.export) decoders
// (graph/fuse_optimum.cc): small written pattern graphs, each run fused and with the
// fusion blocked (an intermediate exported as a graph output), outputs compared.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>

#include "model_file.h"

namespace nbits::testing {
namespace {

using onnx::DataType;
using onnx::dim_param;
using onnx::dim_value;
using onnx::int_attr;
using onnx::ints_attr;

onnx::ModelWriter writer() {
  onnx::ModelWriter w;
  w.add_opset("", 18);
  w.add_opset("com.microsoft", 1);
  return w;
}

std::vector<float> out_floats(const graph::Session& s, const char* name) {
  const graph::Tensor& t = s.output(name);
  return std::vector<float>(t.as<float>(), t.as<float>() + t.numel());
}

std::vector<std::string> op_types(const graph::Session& s) {
  std::vector<std::string> v;
  for (const auto& p : s.profile()) v.push_back(p.op_type);
  return v;
}

void scalar_f(onnx::ModelWriter& w, const std::string& name, float v) {
  w.add_initializer(name, DataType::kFloat, {}, bytes_of(std::vector<float>{v}));
}
void ints(onnx::ModelWriter& w, const std::string& name, std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  w.add_initializer(name, DataType::kInt64, {n}, bytes_of(v));
}

void expect_near(const std::vector<float>& a, const std::vector<float>& b, float tol) {
  ASSERT_EQ(a.size(), b.size());
  bool nonzero = false;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_NEAR(a[i], b[i], tol * (1.0f + std::fabs(b[i]))) << "at " << i;
    nonzero = nonzero || a[i] != 0.0f;
  }
  EXPECT_TRUE(nonzero);
}

enum class Inv { kDivOne, kReciprocal, kDivX };

// y = RMSNorm(x) * gamma, written out as torch.onnx.export does; with `skip` x =
// Cast(Add(a, b)) and the sum is also read by a residual Add (out2 = x + a).
// `block` exports the Sqrt output, which must keep the plain ops.
std::unique_ptr<graph::Session> rms_model(bool skip, Inv inv, bool gemma, bool block) {
  const int64_t D = 8;
  auto w = writer();
  w.add_input("a", DataType::kFloat, {dim_value(3), dim_value(D)});
  std::string x = "a";
  if (skip) {
    w.add_input("b", DataType::kFloat, {dim_value(3), dim_value(D)});
    w.add_node("Add", "", "res", {"a", "b"}, {"h"});
    w.add_node("Cast", "", "cast", {"h"}, {"x"}, {int_attr("to", 1)});
    x = "x";
  }
  scalar_f(w, "two", 2.0f);
  scalar_f(w, "eps", 1e-6f);
  scalar_f(w, "one", 1.0f);
  ints(w, "axes", {-1});
  std::vector<float> gamma = random_floats(D, 5);
  w.add_initializer("gamma", DataType::kFloat, {D}, bytes_of(gamma));
  w.add_node("Pow", "", "pow", {x, "two"}, {"p"});
  w.add_node("ReduceMean", "", "mean", {"p", "axes"}, {"m"}, {int_attr("keepdims", 1)});
  w.add_node("Add", "", "add_eps", {"m", "eps"}, {"e"});
  w.add_node("Sqrt", "", "sqrt", {"e"}, {"s"});
  if (inv == Inv::kDivOne) {
    w.add_node("Div", "", "div", {"one", "s"}, {"r"});
    w.add_node("Mul", "", "scale", {x, "r"}, {"n"});
  } else if (inv == Inv::kReciprocal) {
    w.add_node("Reciprocal", "", "rec", {"s"}, {"r"});
    w.add_node("Mul", "", "scale", {"r", x}, {"n"});
  } else {
    w.add_node("Div", "", "div", {x, "s"}, {"n"});
  }
  w.add_node("Cast", "", "cast_n", {"n"}, {"nc"}, {int_attr("to", 1)});
  std::string g = "gamma";
  if (gemma) {
    w.add_node("Add", "", "one_plus", {"gamma", "one"}, {"g1"});
    g = "g1";
  }
  w.add_node("Mul", "", "weight", {g, "nc"}, {"y"});
  w.add_output("y", DataType::kFloat, {dim_value(3), dim_value(D)});
  if (skip) {
    w.add_node("Add", "", "residual", {x, "a"}, {"y2"});
    w.add_output("y2", DataType::kFloat, {dim_value(3), dim_value(D)});
  }
  if (block) w.add_output("s", DataType::kFloat, {dim_value(3), dim_value(1)});
  return load_written(w);
}

TEST(RmsNormFusion, MatchesThePlainOps) {
  const auto a = random_floats(3 * 8, 21), b = random_floats(3 * 8, 22);
  for (bool skip : {false, true})
    for (Inv inv : {Inv::kDivOne, Inv::kReciprocal, Inv::kDivX})
      for (bool gemma : {false, true}) {
        SCOPED_TRACE(std::string(skip ? "skip " : "") + std::to_string(static_cast<int>(inv)) +
                     (gemma ? " gemma" : ""));
        auto fused = rms_model(skip, inv, gemma, false), plain = rms_model(skip, inv, gemma, true);
        const std::vector<std::string> want{skip ? "SkipSimplifiedLayerNormalization"
                                                 : "SimplifiedLayerNormalization"};
        std::vector<std::string> types = op_types(*fused);
        if (skip) types.pop_back();  // the residual Add
        EXPECT_EQ(types, want);
        EXPECT_GT(op_types(*plain).size(), 5u);
        for (auto* s : {fused.get(), plain.get()}) {
          s->bind_input("a", {graph::DType::kF32, {3, 8}, const_cast<float*>(a.data())});
          if (skip) s->bind_input("b", {graph::DType::kF32, {3, 8}, const_cast<float*>(b.data())});
          s->run();
        }
        expect_near(out_floats(*fused, "y"), out_floats(*plain, "y"), 2e-6f);
        if (skip) expect_near(out_floats(*fused, "y2"), out_floats(*plain, "y2"), 0.0f);
      }
}

TEST(RmsNormFusion, ReduceOverAnotherAxisIsLeftAlone) {
  auto w = writer();
  w.add_input("a", DataType::kFloat, {dim_value(3), dim_value(8)});
  scalar_f(w, "two", 2.0f);
  scalar_f(w, "eps", 1e-6f);
  ints(w, "axes", {0});
  w.add_initializer("gamma", DataType::kFloat, {8}, bytes_of(random_floats(8, 5)));
  w.add_node("Pow", "", "pow", {"a", "two"}, {"p"});
  w.add_node("ReduceMean", "", "mean", {"p", "axes"}, {"m"}, {int_attr("keepdims", 1)});
  w.add_node("Add", "", "add_eps", {"m", "eps"}, {"e"});
  w.add_node("Sqrt", "", "sqrt", {"e"}, {"s"});
  w.add_node("Div", "", "div", {"a", "s"}, {"n"});
  w.add_node("Mul", "", "weight", {"n", "gamma"}, {"y"});
  w.add_output("y", DataType::kFloat, {dim_value(3), dim_value(8)});
  auto s = load_written(w);
  EXPECT_EQ(op_types(*s).size(), 6u);
}

// One Optimum-style attention layer: x -> q/k/v MatMul -> Reshape/Transpose, rotary
// from position_ids x inv_freq (rotate_half), present = Concat(past, new), repeat_kv,
// Softmax(q*c @ (k^T)*c + causal mask of attention_mask) @ v -> Transpose -> Reshape.
// `block` also exports the scores, which must keep the plain graph.
constexpr int64_t kHid = 16, kNq = 4, kNkv = 2, kD = 4;

// A MatMulNBits projection x [.., 16] -> [.., N] (4 bits, block 16) with a bias.
void nbits_projection(onnx::ModelWriter& w, const std::string& name, const std::string& x,
                      const std::string& y, int64_t N, uint32_t seed) {
  std::vector<uint8_t> B(N * 8);
  for (size_t i = 0; i < B.size(); ++i) B[i] = static_cast<uint8_t>(i * (37 + seed) + seed);
  std::vector<float> S(N), bias = random_floats(N, seed + 50);
  for (int64_t n = 0; n < N; ++n) S[n] = 0.02f * static_cast<float>(n % 5 + 1);
  w.add_initializer(name + "_B", DataType::kUint8, {N, 1, 8}, B);
  w.add_initializer(name + "_S", DataType::kFloat, {N}, bytes_of(S));
  w.add_initializer(name + "_bias", DataType::kFloat, {N}, bytes_of(bias));
  w.add_node("MatMulNBits", "com.microsoft", name, {x, name + "_B", name + "_S"}, {name + "_mm"},
             {int_attr("K", 16), int_attr("N", N), int_attr("bits", 4), int_attr("block_size", 16)});
  w.add_node("Add", "", name + "_add", {name + "_mm", name + "_bias"}, {y});
}

// Other exporters' forms of the same layer: Phi-3's packed q/k/v (one projection, three Slices)
// and partial rotary (Concat(rotary(Slice(x, 0, r)), Slice(x, r, end)), r the tables' width: 2 of
// D = 4 here), Gemma-3's per-head norm after the transpose.
// onnxslim's folds of the partial form (the fp16 / q4f16 files): `folded_width` gives r as the
// constant it is (no Gather(Shape(cos4), 3)); `no_pass` is the form whose r is the head size, the
// empty pass-through Slice and its Concat removed (rotary(Slice(x, 0, D)) alone).
struct Layout {
  bool packed_qkv = false, partial_rotary = false, norm_after_transpose = false;
  bool folded_width = false, no_pass = false;
  float softcap = 0;  // Gemma-2 eager: Mul(Tanh(Div(scores, c)), c) before the mask
};

std::unique_ptr<graph::Session> attention_model(bool block, int64_t window = 0, bool qk_norm = false,
                                                bool quantized = false, Layout lay = {}) {
  auto w = writer();
  w.add_input("x", DataType::kFloat, {dim_value(1), dim_param("S"), dim_value(kHid)});
  w.add_input("attention_mask", DataType::kInt64, {dim_value(1), dim_param("T")});
  w.add_input("position_ids", DataType::kInt64, {dim_value(1), dim_param("S")});
  for (const char* p : {"past_k", "past_v"})
    w.add_input(p, DataType::kFloat, {dim_value(1), dim_value(kNkv), dim_param("P"), dim_value(kD)});
  w.add_initializer("Wq", DataType::kFloat, {kHid, kNq * kD}, bytes_of(random_floats(kHid * kNq * kD, 1)));
  w.add_initializer("Wk", DataType::kFloat, {kHid, kNkv * kD}, bytes_of(random_floats(kHid * kNkv * kD, 2)));
  w.add_initializer("Wv", DataType::kFloat, {kHid, kNkv * kD}, bytes_of(random_floats(kHid * kNkv * kD, 3)));
  w.add_initializer("bq", DataType::kFloat, {kNq * kD}, bytes_of(random_floats(kNq * kD, 4)));
  if (lay.packed_qkv) {  // Phi-3: qkv_proj, split by Slices on the last axis
    const int64_t n = (kNq + 2 * kNkv) * kD;
    if (quantized) {
      nbits_projection(w, "qkv_proj", "x", "qkv", n, 1);
    } else {
      w.add_initializer("Wqkv", DataType::kFloat, {kHid, n}, bytes_of(random_floats(kHid * n, 1)));
      w.add_node("MatMul", "", "qkv_mm", {"x", "Wqkv"}, {"qkv"});
    }
    ints(w, "ax_2", {2});
    ints(w, "s_q", {0});
    ints(w, "s_k", {kNq * kD});
    ints(w, "s_v", {(kNq + kNkv) * kD});
    ints(w, "s_end", {INT64_MAX});
    w.add_node("Slice", "", "q_sl", {"qkv", "s_q", "s_k", "ax_2"}, {"q"});
    w.add_node("Slice", "", "k_sl", {"qkv", "s_k", "s_v", "ax_2"}, {"k"});
    w.add_node("Slice", "", "v_sl", {"qkv", "s_v", "s_end", "ax_2"}, {"v"});
  } else if (quantized) {  // q4 exports: MatMulNBits (+ bias, fused at load), packed into one at load
    nbits_projection(w, "q_proj", "x", "q", kNq * kD, 1);
    nbits_projection(w, "k_proj", "x", "k", kNkv * kD, 2);
    nbits_projection(w, "v_proj", "x", "v", kNkv * kD, 3);
  } else {
    w.add_node("MatMul", "", "q_mm", {"x", "Wq"}, {"q0"});
    w.add_node("Add", "", "q_bias", {"bq", "q0"}, {"q"});
    w.add_node("MatMul", "", "k_mm", {"x", "Wk"}, {"k"});
    w.add_node("MatMul", "", "v_mm", {"x", "Wv"}, {"v"});
  }
  ints(w, "shape_q", {0, 0, -1, kD});
  scalar_f(w, "two", 2.0f);
  scalar_f(w, "eps", 1e-6f);
  scalar_f(w, "one", 1.0f);
  ints(w, "axes_last", {-1});
  for (const char* p : {"q", "k", "v"}) {
    const std::string s(p);
    w.add_node("Reshape", "", s + "_r", {s, "shape_q"}, {s + "4"});
    std::string t_in = s + "4";
    const bool normed = qk_norm && s != "v";
    if (lay.norm_after_transpose) {  // the norm (if any) reads the transposed head
      t_in = normed ? s + "t0" : s + "t";
      w.add_node("Transpose", "", s + "_t", {s + "4"}, {t_in}, {ints_attr("perm", {0, 2, 1, 3})});
    }
    if (normed) {  // Qwen3: per-head RMSNorm over D, between Reshape and Transpose (Gemma-3: after)
      const std::string n = s + "_norm/";
      w.add_initializer(n + "w", DataType::kFloat, {kD}, bytes_of(random_floats(kD, s == "q" ? 7 : 8)));
      w.add_node("Cast", "", n + "cast", {t_in}, {n + "x"}, {int_attr("to", 1)});
      w.add_node("Pow", "", n + "pow", {n + "x", "two"}, {n + "p"});
      w.add_node("ReduceMean", "", n + "mean", {n + "p", "axes_last"}, {n + "m"}, {int_attr("keepdims", 1)});
      w.add_node("Add", "", n + "add", {n + "m", "eps"}, {n + "e"});
      w.add_node("Sqrt", "", n + "sqrt", {n + "e"}, {n + "s"});
      w.add_node("Div", "", n + "div", {"one", n + "s"}, {n + "r"});
      w.add_node("Mul", "", n + "mul", {n + "x", n + "r"}, {n + "n"});
      w.add_node("Mul", "", n + "w_mul", {n + "w", n + "n"}, {lay.norm_after_transpose ? s + "t" : n + "y"});
      t_in = n + "y";
    }
    if (!lay.norm_after_transpose)
      w.add_node("Transpose", "", s + "_t", {t_in}, {s + "t"}, {ints_attr("perm", {0, 2, 1, 3})});
  }
  // Rotary tables from position_ids.
  const int64_t rot = lay.partial_rotary && !lay.no_pass ? 2 : kD;  // rotary width
  w.add_initializer("inv_freq", DataType::kFloat, {1, rot / 2, 1},
                    bytes_of(rot == 2 ? std::vector<float>{0.5f} : std::vector<float>{1.0f, 0.01f}));
  ints(w, "ax1", {1});
  ints(w, "ax2", {2});
  w.add_node("Unsqueeze", "", "pos_u", {"position_ids", "ax1"}, {"pos_u"});
  w.add_node("Cast", "", "pos_f", {"pos_u"}, {"pos_f"}, {int_attr("to", 1)});
  w.add_node("MatMul", "", "freq_mm", {"inv_freq", "pos_f"}, {"fr"});
  w.add_node("Transpose", "", "freq_t", {"fr"}, {"frt"}, {ints_attr("perm", {0, 2, 1})});
  w.add_node("Concat", "", "emb", {"frt", "frt"}, {"emb"}, {int_attr("axis", -1)});
  w.add_node("Cos", "", "cos", {"emb"}, {"cos0"});
  w.add_node("Sin", "", "sin", {"emb"}, {"sin0"});
  scalar_f(w, "att_scaling", 1.0f);
  w.add_node("Mul", "", "cos_s", {"cos0", "att_scaling"}, {"cos3"});
  w.add_node("Mul", "", "sin_s", {"sin0", "att_scaling"}, {"sin3"});
  w.add_node("Unsqueeze", "", "cos_u", {"cos3", "ax1"}, {"cos4"});
  w.add_node("Unsqueeze", "", "sin_u", {"sin3", "ax1"}, {"sin4"});
  ints(w, "zero", {0});
  ints(w, "half", {rot / 2});
  ints(w, "big", {1 << 30});
  ints(w, "last", {-1});
  if (lay.partial_rotary && (lay.folded_width || lay.no_pass)) {  // r folded to its value
    ints(w, "rot_w", {rot});
  } else if (lay.partial_rotary) {  // r = Gather(Shape(cos4), 3)
    ints(w, "three", {3});
    w.add_node("Shape", "", "cos_shape", {"cos4"}, {"cos_shape"});
    w.add_node("Gather", "", "rot_w", {"cos_shape", "three"}, {"rot_w"}, {int_attr("axis", 0)});
  }
  for (const char* p : {"q", "k"}) {
    const std::string s(p);
    std::string in = s + "t", out = s + "rot";
    const bool pass = lay.partial_rotary && !lay.no_pass;
    if (lay.partial_rotary) {
      w.add_node("Slice", "", s + "_prot", {s + "t", "zero", "rot_w", "last"}, {s + "pr"});
      if (pass) w.add_node("Slice", "", s + "_ppass", {s + "t", "rot_w", "big", "last"}, {s + "pp"});
      in = s + "pr";
      if (pass) out = s + "prot";
    }
    w.add_node("Slice", "", s + "_s1", {in, "zero", "half", "last"}, {s + "x1"});
    w.add_node("Slice", "", s + "_s2", {in, "half", "big", "last"}, {s + "x2"});
    w.add_node("Neg", "", s + "_neg", {s + "x2"}, {s + "nx2"});
    w.add_node("Concat", "", s + "_rh", {s + "nx2", s + "x1"}, {s + "rh"}, {int_attr("axis", -1)});
    w.add_node("Mul", "", s + "_mc", {in, "cos4"}, {s + "mc"});
    w.add_node("Mul", "", s + "_ms", {s + "rh", "sin4"}, {s + "ms"});
    w.add_node("Add", "", s + "_rot", {s + "mc", s + "ms"}, {out});
    if (pass) w.add_node("Concat", "", s + "_pcat", {out, s + "pp"}, {s + "rot"}, {int_attr("axis", -1)});
  }
  w.add_node("Concat", "", "cat_k", {"past_k", "krot"}, {"present_k"}, {int_attr("axis", -2)});
  w.add_node("Concat", "", "cat_v", {"past_v", "vt"}, {"present_v"}, {int_attr("axis", -2)});
  ints(w, "rep", {1, 1, kNq / kNkv, 1, 1});
  ints(w, "shape_rep", {1, kNq, -1, kD});
  for (const char* p : {"k", "v"}) {
    const std::string s(p);
    w.add_node("Unsqueeze", "", s + "_ru", {"present_" + s, "ax2"}, {s + "ru"});
    w.add_node("Expand", "", s + "_re", {s + "ru", "rep"}, {s + "re"});
    w.add_node("Reshape", "", s + "_rr", {s + "re", "shape_rep"}, {s + "rep"});
  }
  // Causal mask of attention_mask: key j visible to query i iff j <= T - S + i and mask[j] != 0.
  ints(w, "one_i", {1});
  w.add_node("Shape", "", "shape_m", {"attention_mask"}, {"shm"});
  w.add_node("Gather", "", "T", {"shm", "one_i"}, {"T"}, {int_attr("axis", 0)});
  w.add_node("Shape", "", "shape_x", {"x"}, {"shx"});
  w.add_node("Gather", "", "S", {"shx", "one_i"}, {"S"}, {int_attr("axis", 0)});
  w.add_node("Sub", "", "P", {"T", "S"}, {"P"});
  ints(w, "zero_s", {0});
  w.add_node("Squeeze", "", "T0", {"T", "zero_s"}, {"T0"});
  w.add_node("Squeeze", "", "P0", {"P", "zero_s"}, {"P0"});
  w.add_initializer("c0", DataType::kInt64, {}, bytes_of(std::vector<int64_t>{0}));
  w.add_initializer("c1", DataType::kInt64, {}, bytes_of(std::vector<int64_t>{1}));
  w.add_node("Range", "", "cols", {"c0", "T0", "c1"}, {"cols"});
  w.add_node("Range", "", "rows", {"P0", "T0", "c1"}, {"rows"});
  w.add_node("Unsqueeze", "", "rows_u", {"rows", "ax1"}, {"rows_u"});
  w.add_node("LessOrEqual", "", "causal", {"cols", "rows_u"}, {"causal"});
  w.add_node("Cast", "", "mask_b", {"attention_mask"}, {"mask_b"}, {int_attr("to", 9)});
  if (window > 0) {  // sliding window: also key j > i - window
    ints(w, "window", {window});
    w.add_node("Sub", "", "lo", {"rows_u", "window"}, {"lo"});
    w.add_node("Greater", "", "in_window", {"cols", "lo"}, {"in_window"});
    w.add_node("And", "", "causal_w", {"causal", "in_window"}, {"causal_w"});
    w.add_node("And", "", "allowed", {"causal_w", "mask_b"}, {"allowed"});
  } else {
    w.add_node("And", "", "allowed", {"causal", "mask_b"}, {"allowed"});
  }
  scalar_f(w, "zero_f", 0.0f);
  scalar_f(w, "neg", -3.4028234663852886e38f);
  w.add_node("Where", "", "bias", {"allowed", "zero_f", "neg"}, {"bias"});
  // Scores, softmax, PV.
  scalar_f(w, "sq", 1.0f / std::sqrt(std::sqrt(static_cast<float>(kD))));
  w.add_node("Transpose", "", "kT", {"krep"}, {"kT"}, {ints_attr("perm", {0, 1, 3, 2})});
  w.add_node("Mul", "", "q_scaled", {"qrot", "sq"}, {"qs"});
  w.add_node("Mul", "", "k_scaled", {"kT", "sq"}, {"ks"});
  w.add_node("MatMul", "", "qk", {"qs", "ks"}, {lay.softcap > 0 ? "qk0" : "qk"});
  if (lay.softcap > 0) {
    scalar_f(w, "cap", lay.softcap);
    w.add_node("Div", "", "cap_div", {"qk0", "cap"}, {"qk1"});
    w.add_node("Tanh", "", "cap_tanh", {"qk1"}, {"qk2"});
    w.add_node("Mul", "", "cap_mul", {"qk2", "cap"}, {"qk"});
  }
  w.add_node("Add", "", "masked", {"qk", "bias"}, {"scores"});
  w.add_node("Softmax", "", "softmax", {"scores"}, {"probs"}, {int_attr("axis", -1)});
  w.add_node("IsNaN", "", "isnan", {"probs"}, {"nan"});
  w.add_node("Where", "", "no_nan", {"nan", "zero_f", "probs"}, {"probs2"});
  w.add_node("MatMul", "", "pv", {"probs2", "vrep"}, {"o4"});
  w.add_node("Transpose", "", "o_t", {"o4"}, {"ot"}, {ints_attr("perm", {0, 2, 1, 3})});
  ints(w, "shape_o", {0, 0, kNq * kD});
  w.add_node("Reshape", "", "o_r", {"ot", "shape_o"}, {"attn"});
  w.add_output("attn", DataType::kFloat, {dim_value(1), dim_param("S"), dim_value(kNq * kD)});
  for (const char* p : {"present_k", "present_v"})
    w.add_output(p, DataType::kFloat, {dim_value(1), dim_value(kNkv), dim_param("T"), dim_value(kD)});
  if (block)
    w.add_output("scores", DataType::kFloat, {dim_value(1), dim_value(kNq), dim_param("S"), dim_param("T")});
  return load_written(w);
}

// (q/k norm, quantized projections)
class OptimumAttentionFusion : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

// The fused layer (one GroupQueryAttention, no Softmax or Concat left) against the plain one over
// three steps (3, 1, 2 new positions: 6 in all, beyond a window of 3).
void expect_fused_matches_plain(int64_t window, bool qk_norm, bool quantized, Layout lay = {}) {
  auto fused = attention_model(false, window, qk_norm, quantized, lay),
       plain = attention_model(true, window, qk_norm, quantized, lay);
  const std::vector<std::string> types = op_types(*fused);
  EXPECT_EQ(std::count(types.begin(), types.end(), "GroupQueryAttention"), 1);
  EXPECT_EQ(std::count(types.begin(), types.end(), "Softmax"), 0);
  EXPECT_EQ(std::count(types.begin(), types.end(), "Concat"), 0);
  EXPECT_EQ(std::count(types.begin(), types.end(), "Slice"), 0);
  // Quantized q/k/v without per-head norms: one packed MatMulNBits; with them the three stay apart
  // and run as one MatMulNBitsGroup (graph/rewrites.h fuse_matmul_nbits_groups).
  EXPECT_EQ(std::count(types.begin(), types.end(), "MatMulNBits"), quantized && !qk_norm ? 1 : 0);
  EXPECT_EQ(std::count(types.begin(), types.end(), "MatMulNBitsGroup"), quantized && qk_norm ? 1 : 0);
  const std::vector<std::string> plain_types = op_types(*plain);
  EXPECT_EQ(std::count(plain_types.begin(), plain_types.end(), "GroupQueryAttention"), 0);

  // Fused: one shared cache buffer of capacity 8, as the Generator binds it.
  const int64_t cap = 8;
  std::vector<float> ck(kNkv * cap * kD, 0.0f), cv(ck.size(), 0.0f);
  // Plain: past grows by Concat.
  std::vector<float> pk, pv;
  int64_t past = 0;
  for (int64_t S : {3, 1, 2}) {
    SCOPED_TRACE("step of " + std::to_string(S) + " after " + std::to_string(past));
    const int64_t T = past + S;
    const auto x = random_floats(S * kHid, 100 + static_cast<uint32_t>(T));
    std::vector<int64_t> mask(T, 1), pos(S);
    for (int64_t i = 0; i < S; ++i) pos[i] = past + i;
    for (auto* s : {fused.get(), plain.get()}) {
      s->bind_input("x", {graph::DType::kF32, {1, S, kHid}, const_cast<float*>(x.data())});
      s->bind_input("attention_mask", {graph::DType::kI64, {1, T}, mask.data()});
      s->bind_input("position_ids", {graph::DType::kI64, {1, S}, pos.data()});
    }
    const graph::Tensor fk{graph::DType::kF32, {1, kNkv, cap, kD}, ck.data()};
    const graph::Tensor fv{graph::DType::kF32, {1, kNkv, cap, kD}, cv.data()};
    fused->bind_input("past_k", fk);
    fused->bind_input("past_v", fv);
    fused->bind_output("present_k", fk);
    fused->bind_output("present_v", fv);
    plain->bind_input("past_k", {graph::DType::kF32, {1, kNkv, past, kD}, pk.data()});
    plain->bind_input("past_v", {graph::DType::kF32, {1, kNkv, past, kD}, pv.data()});
    fused->run();
    plain->run();
    expect_near(out_floats(*fused, "attn"), out_floats(*plain, "attn"), 1e-5f);
    pk = out_floats(*plain, "present_k");
    pv = out_floats(*plain, "present_v");
    // The shared buffer holds the same rows.
    for (int64_t h = 0; h < kNkv; ++h)
      for (int64_t t = 0; t < T * kD; ++t) {
        EXPECT_NEAR(ck[h * cap * kD + t], pk[h * T * kD + t], 1e-5f);
        EXPECT_NEAR(cv[h * cap * kD + t], pv[h * T * kD + t], 1e-6f);
      }
    past = T;
  }
}

TEST_P(OptimumAttentionFusion, GroupQueryAttentionMatchesThePlainOps) {
  const auto [qk_norm, quantized] = GetParam();
  expect_fused_matches_plain(0, qk_norm, quantized);
}

// Phi-3's layer: packed q/k/v split by Slices (fp32 MatMul and MatMulNBits), partial rotary (also
// as onnxslim folds it in the fp16 / q4f16 files), and its sliding window (local_window_size);
// Gemma-3's q/k norms after the transpose; Gemma-2's attention logit softcapping (a cap of 0.5
// bends these scores: GroupQueryAttention's softcap).
TEST_P(OptimumAttentionFusion, Phi3AndGemma3FormsMatchThePlainOps) {
  const auto [qk_norm, quantized] = GetParam();
  for (const auto& [name, lay] : std::vector<std::pair<std::string, Layout>>{
           {"packed qkv", {true, false, false}},
           {"partial rotary", {false, true, false}},
           {"packed qkv + partial rotary", {true, true, false}},
           {"norm after transpose", {false, false, true}},
           {"partial rotary, width folded", {false, true, false, true}},
           {"full-width rotary Slice, no pass-through", {true, true, false, false, true}},
           {"softcap", {false, false, false, false, false, 0.5f}}}) {
    for (int64_t window : {0, 3}) {
      SCOPED_TRACE(name + ", window " + std::to_string(window));
      expect_fused_matches_plain(window, qk_norm, quantized, lay);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(QkNormQuantized, OptimumAttentionFusion,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool()));

// Packed q/k/v whose slices leave a gap are not split (and the layer keeps the plain ops).
TEST(OptimumAttentionRefused, SlicesThatDoNotTileTheProjectionKeepThePlainOps) {
  auto w = writer();
  w.add_input("x", DataType::kFloat, {dim_value(1), dim_param("S"), dim_value(kHid)});
  w.add_initializer("W", DataType::kFloat, {kHid, 8}, bytes_of(random_floats(kHid * 8, 1)));
  w.add_node("MatMul", "", "mm", {"x", "W"}, {"y"});
  ints(w, "ax", {-1});
  ints(w, "a0", {0});
  ints(w, "a3", {3});
  ints(w, "a4", {4});
  ints(w, "a8", {8});
  w.add_node("Slice", "", "s0", {"y", "a0", "a3", "ax"}, {"y0"});
  w.add_node("Slice", "", "s1", {"y", "a4", "a8", "ax"}, {"y1"});
  for (const char* o : {"y0", "y1"}) w.add_output(o, DataType::kFloat, {});
  auto s = load_written(w);
  const std::vector<std::string> types = op_types(*s);
  EXPECT_EQ(std::count(types.begin(), types.end(), "Slice"), 2);
  EXPECT_EQ(std::count(types.begin(), types.end(), "MatMul"), 1);
}

// Phi-3's gate_up_proj: chunk(2) by Slices whose bounds are shape arithmetic on N ((N + 1) / 2),
// then SiLU gating: split into two projections and fused into SiluMul; fp32 MatMul, MatMulNBits and
// the int8 files' DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul(scales) (MatMulDequantized
// once rewritten: W, scale and zero point split by columns). `block` exports the projection, which
// must keep the plain ops.
enum class Proj { kMatMul, kNBits, kInt8 };

std::unique_ptr<graph::Session> gate_up_model(Proj proj, bool block) {
  const int64_t F = 8;
  auto w = writer();
  w.add_input("x", DataType::kFloat, {dim_value(1), dim_param("S"), dim_value(kHid)});
  if (proj == Proj::kNBits) {
    nbits_projection(w, "gate_up", "x", "gu", 2 * F, 9);
  } else if (proj == Proj::kInt8) {  // quantize_dynamic's chain, per-column scales and zero points
    std::vector<uint8_t> W(kHid * 2 * F), zp(2 * F);
    std::vector<float> scale(2 * F);
    for (size_t i = 0; i < W.size(); ++i) W[i] = static_cast<uint8_t>(i * 37 + 11);  // any int8 byte
    for (int64_t n = 0; n < 2 * F; ++n) {
      zp[n] = static_cast<uint8_t>(n * 29);
      scale[n] = 0.003f * static_cast<float>(n + 1);
    }
    w.add_initializer("W8", DataType::kInt8, {kHid, 2 * F}, W);
    w.add_initializer("W8_zp", DataType::kInt8, {2 * F}, zp);
    w.add_initializer("W8_scale", DataType::kFloat, {2 * F}, bytes_of(scale));
    w.add_node("DynamicQuantizeLinear", "", "dql", {"x"}, {"xq", "xs", "xz"});
    w.add_node("MatMulInteger", "", "mmi", {"xq", "W8", "xz", "W8_zp"}, {"acc"});
    w.add_node("Cast", "", "acc_f", {"acc"}, {"accf"}, {int_attr("to", 1)});
    w.add_node("Mul", "", "scales", {"xs", "W8_scale"}, {"sc"});
    w.add_node("Mul", "", "deq", {"accf", "sc"}, {"gu"});
  } else {
    w.add_initializer("W", DataType::kFloat, {kHid, 2 * F}, bytes_of(random_floats(kHid * 2 * F, 9)));
    w.add_node("MatMul", "", "mm", {"x", "W"}, {"gu"});
  }
  ints(w, "last", {-1});
  ints(w, "zero", {0});
  ints(w, "one", {1});
  ints(w, "two", {2});
  w.add_node("Shape", "", "shape", {"gu"}, {"sh"});
  w.add_node("Gather", "", "n", {"sh", "last"}, {"n"}, {int_attr("axis", 0)});
  w.add_node("Add", "", "n1", {"n", "one"}, {"n1"});
  w.add_node("Div", "", "half", {"n1", "two"}, {"h"});
  w.add_node("Mul", "", "end0", {"h", "one"}, {"e0"});
  w.add_node("Mul", "", "end1", {"h", "two"}, {"e1"});
  w.add_node("Slice", "", "gate", {"gu", "zero", "e0", "last"}, {"g"});
  w.add_node("Slice", "", "up", {"gu", "e0", "e1", "last"}, {"u"});
  w.add_node("Sigmoid", "", "sig", {"g"}, {"sg"});
  w.add_node("Mul", "", "silu", {"g", "sg"}, {"a"});
  w.add_node("Mul", "", "gating", {"u", "a"}, {"y"});
  w.add_output("y", DataType::kFloat, {dim_value(1), dim_param("S"), dim_value(F)});
  if (block) w.add_output("gu", DataType::kFloat, {dim_value(1), dim_param("S"), dim_value(2 * F)});
  return load_written(w);
}

TEST(SplitSlicedProjections, PackedGateUpBecomesSiluMul) {
  const auto x = random_floats(3 * kHid, 31);
  for (Proj proj : {Proj::kMatMul, Proj::kNBits, Proj::kInt8}) {
    const std::string mm = proj == Proj::kNBits  ? "MatMulNBits"
                           : proj == Proj::kInt8 ? "MatMulDequantized"
                                                 : "MatMul";
    SCOPED_TRACE(mm);
    auto fused = gate_up_model(proj, false), plain = gate_up_model(proj, true);
    // MatMulNBits gate and up then run as one node with the SiLU in its epilogue.
    const std::vector<std::string> want = proj == Proj::kNBits
                                              ? std::vector<std::string>{"MatMulNBitsSiluMul"}
                                              : std::vector<std::string>{mm, mm, "SiluMul"};
    EXPECT_EQ(op_types(*fused), want);
    const std::vector<std::string> plain_types = op_types(*plain);
    EXPECT_EQ(std::count(plain_types.begin(), plain_types.end(), "Slice"), 2);
    for (auto* s : {fused.get(), plain.get()}) {
      s->bind_input("x", {graph::DType::kF32, {1, 3, kHid}, const_cast<float*>(x.data())});
      s->run();
    }
    expect_near(out_floats(*fused, "y"), out_floats(*plain, "y"), 1e-6f);
  }
}

// gelu_pytorch_tanh written out (Gemma-3's MLP) becomes FastGelu; `block` exports the Tanh.
std::unique_ptr<graph::Session> gelu_model(bool block) {
  auto w = writer();
  w.add_input("x", DataType::kFloat, {dim_value(2), dim_value(8)});
  scalar_f(w, "c0", 0.044715f);
  scalar_f(w, "c1", 0.7978845608028654f);
  scalar_f(w, "one", 1.0f);
  scalar_f(w, "half", 0.5f);
  w.add_node("Mul", "", "sq", {"x", "x"}, {"x2"});
  w.add_node("Mul", "", "cube", {"x", "x2"}, {"x3"});
  w.add_node("Mul", "", "m3", {"c0", "x3"}, {"t3"});
  w.add_node("Add", "", "inner", {"x", "t3"}, {"in"});
  w.add_node("Mul", "", "m4", {"c1", "in"}, {"u"});
  w.add_node("Tanh", "", "tanh", {"u"}, {"th"});
  w.add_node("Add", "", "a1", {"one", "th"}, {"p"});
  w.add_node("Mul", "", "m5", {"x", "p"}, {"xp"});
  w.add_node("Mul", "", "m6", {"half", "xp"}, {"y"});
  w.add_output("y", DataType::kFloat, {dim_value(2), dim_value(8)});
  if (block) w.add_output("th", DataType::kFloat, {dim_value(2), dim_value(8)});
  return load_written(w);
}

TEST(GeluTanhFusion, BecomesFastGelu) {
  std::vector<float> x = random_floats(16, 41);
  for (float& v : x) v *= 4.0f;
  auto fused = gelu_model(false), plain = gelu_model(true);
  EXPECT_EQ(op_types(*fused), std::vector<std::string>{"FastGelu"});
  EXPECT_EQ(op_types(*plain).size(), 9u);
  for (auto* s : {fused.get(), plain.get()}) {
    s->bind_input("x", {graph::DType::kF32, {2, 8}, x.data()});
    s->run();
  }
  expect_near(out_floats(*fused, "y"), out_floats(*plain, "y"), 1e-5f);
}

}  // namespace
}  // namespace nbits::testing
