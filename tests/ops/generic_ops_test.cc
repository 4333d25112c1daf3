// The generic ai.onnx / com.microsoft ops of builder graphs (compare.cc, unary.cc, generate.cc,
// reduce.cc, norms.cc LayerNormalization and SkipLayerNormalization), each as a one-node model:
// values against hand-computed expectations, broadcasting, opset forms, attribute errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "base/fp16.h"
#include "graph/op.h"
#include "model_file.h"
#include "support/alloc_counter.h"

namespace nbits::testing {
namespace {

using graph::Shape;
using onnx::DataType;
using onnx::float_attr;
using onnx::int_attr;
using onnx::ints_attr;
using onnx::string_attr;

// One input of the node: a graph input bound at run, or an initializer (init).
struct Value {
  std::string name;
  DataType dt = DataType::kFloat;
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;
  bool init = false;
};

template <typename T>
constexpr DataType data_type() {
  if constexpr (std::is_same_v<T, float>) return DataType::kFloat;
  if constexpr (std::is_same_v<T, int64_t>) return DataType::kInt64;
  if constexpr (std::is_same_v<T, int32_t>) return DataType::kInt32;
  if constexpr (std::is_same_v<T, uint8_t>) return DataType::kBool;
  return DataType::kUndefined;
}

template <typename T>
Value val(std::string name, std::vector<int64_t> dims, std::vector<T> v) {
  return {std::move(name), data_type<T>(), std::move(dims), bytes_of(v), false};
}
template <typename T>
Value init(std::string name, std::vector<int64_t> dims, std::vector<T> v) {
  Value r = val(std::move(name), std::move(dims), std::move(v));
  r.init = true;
  return r;
}

using B = std::vector<uint8_t>;  // bool tensors (0/1 bytes)
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

struct Run {
  std::vector<Value> ins;
  std::unique_ptr<graph::Session> s;
  const graph::Tensor& out(const char* name) const { return s->output(name); }
  template <typename T>
  std::vector<T> get(const char* name) const {
    const graph::Tensor& t = s->output(name);
    return std::vector<T>(t.as<T>(), t.as<T>() + t.numel());
  }
  void bind_and_run() {
    for (Value& v : ins) {
      if (v.init || v.name.empty()) continue;
      graph::Shape sh;
      for (int64_t d : v.dims) sh.push_back(d);
      s->bind_input(v.name, {*graph::to_dtype(v.dt), sh, v.bytes.data()});
    }
    s->run();
  }
};

// Loads and runs the one-node model `op` (throws nbits::Error on load or run errors).
std::unique_ptr<Run> run_node(const std::string& op, const std::string& domain, std::vector<Value> ins,
                              std::vector<std::string> outs, std::vector<onnx::WriterAttr> attrs = {},
                              int threads = 1, int64_t opset = 21) {
  auto r = std::make_unique<Run>();
  r->ins = std::move(ins);
  onnx::ModelWriter w;
  w.add_opset("", opset);
  w.add_opset("com.microsoft", 1);
  std::vector<std::string> names;
  for (const Value& v : r->ins) {
    names.push_back(v.name);
    if (v.name.empty()) continue;
    if (v.init) {
      w.add_initializer(v.name, v.dt, v.dims, std::vector<uint8_t>(v.bytes));
    } else {
      std::vector<onnx::Dim> dims;
      for (int64_t d : v.dims) dims.push_back(onnx::dim_value(d));
      w.add_input(v.name, v.dt, dims);
    }
  }
  w.add_node(op, domain, "n", names, outs, std::move(attrs));
  for (const std::string& o : outs)
    if (!o.empty()) w.add_output(o, DataType::kUndefined, {});
  graph::SessionOptions opt;
  opt.threads = threads;
  r->s = load_written(w, opt);
  r->bind_and_run();
  return r;
}

std::unique_ptr<Run> run1(const std::string& op, std::vector<Value> ins,
                          std::vector<onnx::WriterAttr> attrs = {}) {
  return run_node(op, "", std::move(ins), {"y"}, std::move(attrs));
}

std::string error_of(const std::string& op, const std::string& domain, std::vector<Value> ins,
                     std::vector<std::string> outs, std::vector<onnx::WriterAttr> attrs = {}) {
  try {
    run_node(op, domain, std::move(ins), std::move(outs), std::move(attrs));
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

void expect_floats(const std::vector<float>& got, const std::vector<double>& want, double tol,
                   const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " [" << i << "] = " << got[i];
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << what << " [" << i << "]";
    } else {
      EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::fabs(want[i]))) << what << " [" << i << "]";
    }
  }
}

// ---- comparisons, logic, Where ------------------------------------------------------------

TEST(Compare, FloatBroadcastRowAndColumn) {
  const std::vector<float> a = {1, 2, 3, 4, 5, 6};  // [2,3]
  const std::vector<float> b = {2, 5, 3};           // [3]
  auto lt = run1("Less", {val("a", {2, 3}, a), val("b", {3}, b)});
  EXPECT_EQ(lt->out("y").dtype, graph::DType::kBool);
  EXPECT_EQ(lt->out("y").shape, (Shape{2, 3}));
  EXPECT_EQ(lt->get<uint8_t>("y"), (B{1, 1, 0, 0, 0, 0}));
  EXPECT_EQ(run1("Greater", {val("a", {2, 3}, a), val("b", {3}, b)})->get<uint8_t>("y"),
            (B{0, 0, 0, 1, 0, 1}));
  EXPECT_EQ(run1("LessOrEqual", {val("a", {2, 3}, a), val("b", {3}, b)})->get<uint8_t>("y"),
            (B{1, 1, 1, 0, 1, 0}));
  EXPECT_EQ(run1("GreaterOrEqual", {val("a", {2, 3}, a), val("b", {3}, b)})->get<uint8_t>("y"),
            (B{0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(run1("Equal", {val("a", {2, 3}, a), val("b", {3}, b)})->get<uint8_t>("y"), (B{0, 0, 1, 0, 1, 0}));
  // NaN compares false (and unequal to itself).
  EXPECT_EQ(
      run1("Equal", {val("a", {2}, std::vector<float>{kNaN, 1}), val("b", {2}, std::vector<float>{kNaN, 1})})
          ->get<uint8_t>("y"),
      (B{0, 1}));
}

TEST(Compare, IntegersOuterBroadcast) {
  // [2,1] vs [1,3] -> [2,3]
  auto eq = run1("Equal", {val("a", {2, 1}, std::vector<int64_t>{1, 2}),
                           val("b", {1, 3}, std::vector<int64_t>{0, 1, 2})});
  EXPECT_EQ(eq->out("y").shape, (Shape{2, 3}));
  EXPECT_EQ(eq->get<uint8_t>("y"), (B{0, 1, 0, 0, 0, 1}));
  auto ge = run1("GreaterOrEqual",
                 {val("a", {2, 1}, std::vector<int32_t>{1, 2}), val("b", {}, std::vector<int32_t>{2})});
  EXPECT_EQ(ge->out("y").shape, (Shape{2, 1}));
  EXPECT_EQ(ge->get<uint8_t>("y"), (B{0, 1}));
  // Equal on bool.
  EXPECT_EQ(run1("Equal", {val("a", {4}, B{0, 0, 1, 1}), val("b", {4}, B{0, 1, 0, 1})})->get<uint8_t>("y"),
            (B{1, 0, 0, 1}));
}

TEST(Logic, AndOrXorNotBroadcast) {
  const B a = {0, 0, 1, 1}, b = {0, 1};  // [2,2] x [2]
  EXPECT_EQ(run1("And", {val("a", {2, 2}, a), val("b", {2}, b)})->get<uint8_t>("y"), (B{0, 0, 0, 1}));
  EXPECT_EQ(run1("Or", {val("a", {2, 2}, a), val("b", {2}, b)})->get<uint8_t>("y"), (B{0, 1, 1, 1}));
  EXPECT_EQ(run1("Xor", {val("a", {2, 2}, a), val("b", {2}, b)})->get<uint8_t>("y"), (B{0, 1, 1, 0}));
  EXPECT_EQ(run1("Not", {val("a", {2, 2}, a)})->get<uint8_t>("y"), (B{1, 1, 0, 0}));
}

TEST(Logic, IsNanIsInfDetectFlags) {
  const std::vector<float> x = {1.f, kNaN, kInf, -kInf, 0.f, -2.f};
  EXPECT_EQ(run1("IsNaN", {val("a", {2, 3}, x)})->get<uint8_t>("y"), (B{0, 1, 0, 0, 0, 0}));
  EXPECT_EQ(run1("IsInf", {val("a", {2, 3}, x)})->get<uint8_t>("y"), (B{0, 0, 1, 1, 0, 0}));
  EXPECT_EQ(
      run_node("IsInf", "", {val("a", {6}, x)}, {"y"}, {int_attr("detect_negative", 0)})->get<uint8_t>("y"),
      (B{0, 0, 1, 0, 0, 0}));
  EXPECT_EQ(
      run_node("IsInf", "", {val("a", {6}, x)}, {"y"}, {int_attr("detect_positive", 0)})->get<uint8_t>("y"),
      (B{0, 0, 0, 1, 0, 0}));
  EXPECT_EQ(run1("IsNaN", {val("a", {0}, std::vector<float>{})})->out("y").numel(), 0);
  EXPECT_THROW(run1("IsNaN", {val("a", {2}, std::vector<int64_t>{1, 2})}), Error);
}

TEST(Shape, FlattenAxesAndViews) {
  const std::vector<float> x = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
                                12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23};
  EXPECT_EQ(run1("Flatten", {val("a", {2, 3, 4}, x)})->out("y").shape, (Shape{2, 12}));
  auto f0 = run_node("Flatten", "", {val("a", {2, 3, 4}, x)}, {"y"}, {int_attr("axis", 0)});
  EXPECT_EQ(f0->out("y").shape, (Shape{1, 24}));
  EXPECT_EQ(f0->get<float>("y"), x);
  EXPECT_EQ(run_node("Flatten", "", {val("a", {2, 3, 4}, x)}, {"y"}, {int_attr("axis", -1)})->out("y").shape,
            (Shape{6, 4}));
  EXPECT_EQ(run_node("Flatten", "", {val("a", {2, 3, 4}, x)}, {"y"}, {int_attr("axis", 3)})->out("y").shape,
            (Shape{24, 1}));
  EXPECT_EQ(run1("Flatten", {val("a", {2, 0, 4}, std::vector<float>{})})->out("y").shape, (Shape{2, 0}));
  EXPECT_THROW(
      run_node("Flatten", "", {val("a", {2, 3}, std::vector<float>(6))}, {"y"}, {int_attr("axis", 3)}),
      Error);
}

TEST(Where, ThreeWayBroadcastEveryDtype) {
  // condition [2,1], X [1,3], Y scalar -> [2,3]
  const B c = {1, 0};
  auto f = run1("Where", {val("c", {2, 1}, c), val("x", {1, 3}, std::vector<float>{1, 2, 3}),
                          val("z", {}, std::vector<float>{-1})});
  EXPECT_EQ(f->out("y").shape, (Shape{2, 3}));
  EXPECT_EQ(f->get<float>("y"), (std::vector<float>{1, 2, 3, -1, -1, -1}));
  auto i = run1("Where", {val("c", {3}, B{0, 1, 0}), val("x", {2, 3}, std::vector<int64_t>{1, 2, 3, 4, 5, 6}),
                          val("z", {2, 1}, std::vector<int64_t>{7, 8})});
  EXPECT_EQ(i->get<int64_t>("y"), (std::vector<int64_t>{7, 2, 7, 8, 5, 8}));
  auto i32 = run1("Where", {val("c", {2}, B{1, 0}), val("x", {2}, std::vector<int32_t>{1, 2}),
                            val("z", {2}, std::vector<int32_t>{3, 4})});
  EXPECT_EQ(i32->get<int32_t>("y"), (std::vector<int32_t>{1, 4}));
  auto bo = run1("Where", {val("c", {2}, B{1, 0}), val("x", {2}, B{0, 0}), val("z", {2}, B{1, 1})});
  EXPECT_EQ(bo->out("y").dtype, graph::DType::kBool);
  EXPECT_EQ(bo->get<uint8_t>("y"), (B{0, 1}));
}

TEST(Where, LargeBroadcastThreads) {
  // A causal-mask-like pattern big enough to be split over threads: [64,1] x [1,512].
  const int64_t R = 64, C = 512;
  B cond(R * C);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) cond[r * C + c] = c <= r * 8;
  auto x = random_floats(C, 3);
  auto r =
      run_node("Where", "",
               {val("c", {R, C}, cond), val("x", {1, C}, x), val("z", {R, 1}, std::vector<float>(R, -kInf))},
               {"y"}, {}, 3);
  const auto y = r->get<float>("y");
  for (int64_t i = 0; i < R; ++i)
    for (int64_t c = 0; c < C; ++c) ASSERT_EQ(y[i * C + c], cond[i * C + c] ? x[c] : -kInf) << i << "," << c;
}

TEST(CompareErrors, DtypesAndAttributes) {
  expect_error(error_of("Less", "", {val("a", {2}, B{0, 1}), val("b", {2}, B{0, 1})}, {"y"}),
               {"node 'n' (Less)", "bool", "expected"});
  expect_error(
      error_of("Equal", "",
               {val("a", {2}, std::vector<float>{0, 1}), val("b", {2}, std::vector<int64_t>{0, 1})}, {"y"}),
      {"node 'n' (Equal)", "different dtypes"});
  expect_error(
      error_of("And", "", {val("a", {2}, B{0, 1}), val("b", {2}, B{0, 1})}, {"y"}, {int_attr("foo", 1)}),
      {"node 'n' (And)", "attribute 'foo' is not supported"});
  expect_error(error_of("Where", "",
                        {val("c", {2}, B{1, 0}), val("x", {2}, std::vector<float>{1, 2}),
                         val("z", {2}, std::vector<int64_t>{3, 4})},
                        {"y"}),
               {"node 'n' (Where)", "different dtypes"});
  expect_error(
      error_of("Less", "",
               {val("a", {2}, std::vector<float>{0, 1}), val("b", {3}, std::vector<float>{0, 1, 2})}, {"y"}),
      {"node 'n' (Less)", "cannot be broadcast"});
}

// ---- unary, Pow, Min/Max --------------------------------------------------------------------

TEST(Unary, EveryFloatOp) {
  const std::vector<float> x = {-2.5f, -1.0f, -0.0f, 0.3f, 1.0f, 4.0f};
  struct Case {
    const char* op;
    double (*f)(double);
  };
  const Case cases[] = {
      {"Neg", [](double v) { return -v; }},
      {"Sqrt", [](double v) { return std::sqrt(v); }},
      {"Reciprocal", [](double v) { return 1.0 / v; }},
      {"Tanh", [](double v) { return std::tanh(v); }},
      {"Erf", [](double v) { return std::erf(v); }},
      {"Exp", [](double v) { return std::exp(v); }},
      {"Log", [](double v) { return std::log(v); }},
      {"Abs", [](double v) { return std::fabs(v); }},
      {"Cos", [](double v) { return std::cos(v); }},
      {"Sin", [](double v) { return std::sin(v); }},
      {"Relu", [](double v) { return v > 0 ? v : 0.0; }},
  };
  for (const Case& c : cases) {
    std::vector<double> want;
    for (float v : x) want.push_back(c.f(v));
    auto r = run1(c.op, {val("x", {2, 3}, x)});
    EXPECT_EQ(r->out("y").shape, (Shape{2, 3})) << c.op;
    expect_floats(r->get<float>("y"), want, 1e-6, c.op);
  }
}

TEST(Unary, IntegerNegAbsRelu) {
  const std::vector<int64_t> x = {-3, 0, 5};
  EXPECT_EQ(run1("Neg", {val("x", {3}, x)})->get<int64_t>("y"), (std::vector<int64_t>{3, 0, -5}));
  EXPECT_EQ(run1("Abs", {val("x", {3}, x)})->get<int64_t>("y"), (std::vector<int64_t>{3, 0, 5}));
  EXPECT_EQ(run1("Relu", {val("x", {3}, std::vector<int32_t>{-3, 0, 5})})->get<int32_t>("y"),
            (std::vector<int32_t>{0, 0, 5}));
  expect_error(error_of("Sqrt", "", {val("x", {3}, x)}, {"y"}),
               {"node 'n' (Sqrt)", "int64", "expected float"});
}

TEST(Unary, ExpLargeTensorThreads) {
  auto x = random_floats(40000, 11);
  for (float& v : x) v *= 20.0f;
  auto r = run_node("Exp", "", {val("x", {40000}, x)}, {"y"}, {}, 3);
  std::vector<double> want;
  for (float v : x) want.push_back(std::exp(double(v)));
  expect_floats(r->get<float>("y"), want, 3e-7, "Exp");
}

TEST(Pow, FastPathsAndBroadcast) {
  const std::vector<float> x = {-2.0f, 0.0f, 0.25f, 3.0f};
  auto sq = run1("Pow", {val("x", {4}, x), init("e", {}, std::vector<float>{2.0f})});
  EXPECT_EQ(sq->get<float>("y"), (std::vector<float>{4.0f, 0.0f, 0.0625f, 9.0f}));
  auto rt = run1("Pow", {val("x", {4}, x), val("e", {1}, std::vector<float>{0.5f})});
  expect_floats(rt->get<float>("y"), {kNaN, 0.0, 0.5, std::sqrt(3.0)}, 1e-7, "pow 0.5");
  auto cube = run1("Pow", {val("x", {4}, x), val("e", {}, std::vector<int64_t>{3})});
  expect_floats(cube->get<float>("y"), {-8.0, 0.0, 0.015625, 27.0}, 1e-7, "pow 3 (int64)");
  // Exponent [2,1] broadcast against base [3] -> [2,3].
  auto bc = run1("Pow", {val("x", {3}, std::vector<float>{1.0f, 2.0f, 3.0f}),
                         val("e", {2, 1}, std::vector<float>{-1.0f, 1.5f})});
  EXPECT_EQ(bc->out("y").shape, (Shape{2, 3}));
  expect_floats(bc->get<float>("y"), {1.0, 0.5, 1.0 / 3, 1.0, std::pow(2.0, 1.5), std::pow(3.0, 1.5)}, 1e-6,
                "pow broadcast");
  auto bi = run1(
      "Pow", {val("x", {2, 2}, std::vector<float>{2, 3, 4, 5}), val("e", {2}, std::vector<int32_t>{2, 3})});
  EXPECT_EQ(bi->get<float>("y"), (std::vector<float>{4, 27, 16, 125}));
  expect_error(
      error_of("Pow", "", {val("x", {2}, std::vector<int64_t>{2, 3}), val("e", {}, std::vector<int64_t>{2})},
               {"y"}),
      {"node 'n' (Pow)", "input 0 (X)"});
}

TEST(MinMax, VariadicBroadcastAndNaN) {
  auto mx =
      run1("Max", {val("a", {2, 3}, std::vector<float>{1, 5, 3, -4, 0, 6}),
                   val("b", {3}, std::vector<float>{2, 2, 2}), val("c", {2, 1}, std::vector<float>{0, 7})});
  EXPECT_EQ(mx->out("y").shape, (Shape{2, 3}));
  EXPECT_EQ(mx->get<float>("y"), (std::vector<float>{2, 5, 3, 7, 7, 7}));
  auto mn =
      run1("Min", {val("a", {2, 3}, std::vector<float>{1, 5, 3, -4, 0, 6}),
                   val("b", {3}, std::vector<float>{2, 2, 2}), val("c", {2, 1}, std::vector<float>{0, 7})});
  EXPECT_EQ(mn->get<float>("y"), (std::vector<float>{0, 0, 0, -4, 0, 2}));
  auto nan = run1(
      "Max", {val("a", {3}, std::vector<float>{kNaN, 1, 2}), val("b", {3}, std::vector<float>{0, kNaN, 1})});
  expect_floats(nan->get<float>("y"), {kNaN, kNaN, 2}, 0, "max NaN");
  auto one = run1("Min", {val("a", {3}, std::vector<int64_t>{3, -1, 2})});
  EXPECT_EQ(one->get<int64_t>("y"), (std::vector<int64_t>{3, -1, 2}));
  auto ints =
      run1("Max", {val("a", {3}, std::vector<int32_t>{3, -1, 2}), val("b", {}, std::vector<int32_t>{0})});
  EXPECT_EQ(ints->get<int32_t>("y"), (std::vector<int32_t>{3, 0, 2}));
}

// ---- Gelu family ------------------------------------------------------------------------------

double gelu_erf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}
double quick_gelu(double x, double alpha) { return x / (1.0 + std::exp(-alpha * x)); }

TEST(Gelu, OnnxAndContribForms) {
  auto x = random_floats(2 * 8, 21);
  for (float& v : x) v *= 4.0f;
  const auto bias = random_floats(8, 22);
  std::vector<double> erf_w, tanh_w, tanh_bias_w, erf_bias_w, quick_w, quick2_w;
  for (size_t i = 0; i < x.size(); ++i) {
    const double xb = double(x[i]) + bias[i % 8];
    erf_w.push_back(gelu_erf(x[i]));
    tanh_w.push_back(gelu_tanh(x[i]));
    tanh_bias_w.push_back(gelu_tanh(xb));
    erf_bias_w.push_back(gelu_erf(xb));
    quick_w.push_back(quick_gelu(x[i], 1.702));
    quick2_w.push_back(quick_gelu(x[i], 0.5));
  }
  expect_floats(run1("Gelu", {val("x", {2, 8}, x)})->get<float>("y"), erf_w, 1e-6, "Gelu none");
  expect_floats(run1("Gelu", {val("x", {2, 8}, x)}, {string_attr("approximate", "tanh")})->get<float>("y"),
                tanh_w, 1e-6, "Gelu tanh");
  expect_floats(run_node("Gelu", "com.microsoft", {val("x", {2, 8}, x)}, {"y"})->get<float>("y"), erf_w, 1e-6,
                "ms Gelu");
  expect_floats(run_node("FastGelu", "com.microsoft", {val("x", {2, 8}, x)}, {"y"})->get<float>("y"), tanh_w,
                1e-6, "FastGelu");
  expect_floats(run_node("FastGelu", "com.microsoft", {val("x", {2, 8}, x), init("b", {8}, bias)}, {"y"})
                    ->get<float>("y"),
                tanh_bias_w, 1e-6, "FastGelu bias");
  expect_floats(run_node("BiasGelu", "com.microsoft", {val("x", {2, 8}, x), init("b", {8}, bias)}, {"y"})
                    ->get<float>("y"),
                erf_bias_w, 1e-6, "BiasGelu");
  expect_floats(run_node("QuickGelu", "com.microsoft", {val("x", {2, 8}, x)}, {"y"})->get<float>("y"),
                quick_w, 1e-6, "QuickGelu");
  expect_floats(
      run_node("QuickGelu", "com.microsoft", {val("x", {2, 8}, x)}, {"y"}, {float_attr("alpha", 0.5f)})
          ->get<float>("y"),
      quick2_w, 1e-6, "QuickGelu alpha");
}

TEST(Gelu, Errors) {
  const std::vector<float> x = {1, 2};
  expect_error(error_of("Gelu", "", {val("x", {2}, x)}, {"y"}, {string_attr("approximate", "fast")}),
               {"node 'n' (Gelu)", "'approximate'", "fast"});
  expect_error(error_of("BiasGelu", "com.microsoft", {val("x", {2}, x)}, {"y"}),
               {"node 'n' (BiasGelu)", "bias"});
  expect_error(error_of("FastGelu", "com.microsoft",
                        {val("x", {2}, x), init("b", {3}, std::vector<float>{1, 2, 3})}, {"y"}),
               {"node 'n' (FastGelu)", "bias [3]"});
  expect_error(error_of("QuickGelu", "com.microsoft", {val("x", {2}, x)}, {"y"}, {int_attr("beta", 1)}),
               {"node 'n' (QuickGelu)", "attribute 'beta' is not supported"});
}

// ---- Softmax, ReduceMean, ReduceMax -------------------------------------------------------------

std::vector<double> softmax_ref(const std::vector<float>& x, int64_t outer, int64_t n, int64_t inner) {
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < inner; ++c) {
      double m = -1e300, s = 0;
      for (int64_t i = 0; i < n; ++i) m = std::max(m, double(x[(o * n + i) * inner + c]));
      for (int64_t i = 0; i < n; ++i) s += std::exp(double(x[(o * n + i) * inner + c]) - m);
      for (int64_t i = 0; i < n; ++i)
        y[(o * n + i) * inner + c] = std::exp(double(x[(o * n + i) * inner + c]) - m) / s;
    }
  return y;
}

TEST(Softmax, LastAndMiddleAxis) {
  auto x = random_floats(2 * 3 * 4, 31);
  for (float& v : x) v *= 5.0f;
  expect_floats(run1("Softmax", {val("x", {2, 3, 4}, x)})->get<float>("y"), softmax_ref(x, 6, 4, 1), 1e-6,
                "axis -1");
  expect_floats(run1("Softmax", {val("x", {2, 3, 4}, x)}, {int_attr("axis", 1)})->get<float>("y"),
                softmax_ref(x, 2, 3, 4), 1e-6, "axis 1");
  expect_floats(run1("Softmax", {val("x", {2, 3, 4}, x)}, {int_attr("axis", 0)})->get<float>("y"),
                softmax_ref(x, 1, 2, 12), 1e-6, "axis 0");
  expect_error(
      error_of("Softmax", "", {val("x", {2, 3}, std::vector<float>(6))}, {"y"}, {int_attr("axis", 2)}),
      {"node 'n' (Softmax)", "axis 2 out of range"});
}

// Before opset 13 Softmax sees the input as 2-D [prod(dims < axis), prod(dims >= axis)], axis 1 by default.
TEST(Softmax, Opset11FlattensFromTheAxis) {
  auto x = random_floats(2 * 3 * 4, 37);
  for (float& v : x) v *= 3.0f;
  expect_floats(run_node("Softmax", "", {val("x", {2, 3, 4}, x)}, {"y"}, {}, 1, 11)->get<float>("y"),
                softmax_ref(x, 2, 12, 1), 1e-6, "opset 11, default axis 1");
  expect_floats(
      run_node("Softmax", "", {val("x", {2, 3, 4}, x)}, {"y"}, {int_attr("axis", 2)}, 1, 11)->get<float>("y"),
      softmax_ref(x, 6, 4, 1), 1e-6, "opset 11, axis 2");
}

TEST(Reduce, MeanAxesAttributeAndInput) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};  // [2,3,2]
  // Opset < 18: axes attribute; keepdims default 1.
  auto a = run1("ReduceMean", {val("x", {2, 3, 2}, x)}, {ints_attr("axes", {1})});
  EXPECT_EQ(a->out("y").shape, (Shape{2, 1, 2}));
  EXPECT_EQ(a->get<float>("y"), (std::vector<float>{3, 4, 9, 10}));
  // Opset 18: axes input, keepdims 0, negative axis (trailing block fast path).
  auto b = run1("ReduceMean", {val("x", {2, 3, 2}, x), init("axes", {1}, std::vector<int64_t>{-1})},
                {int_attr("keepdims", 0)});
  EXPECT_EQ(b->out("y").shape, (Shape{2, 3}));
  EXPECT_EQ(b->get<float>("y"), (std::vector<float>{1.5f, 3.5f, 5.5f, 7.5f, 9.5f, 11.5f}));
  // Runtime axes input over two axes.
  auto c = run1("ReduceMean", {val("x", {2, 3, 2}, x), val("axes", {2}, std::vector<int64_t>{0, 2})});
  EXPECT_EQ(c->out("y").shape, (Shape{1, 3, 1}));
  EXPECT_EQ(c->get<float>("y"), (std::vector<float>{4.5f, 6.5f, 8.5f}));
  // No axes: all axes; with noop_with_empty_axes: identity.
  auto d = run1("ReduceMean", {val("x", {2, 3, 2}, x)}, {int_attr("keepdims", 0)});
  EXPECT_EQ(d->out("y").shape, (Shape{}));
  EXPECT_EQ(d->get<float>("y"), (std::vector<float>{6.5f}));
  auto e = run1("ReduceMean", {val("x", {2, 3, 2}, x), init("axes", {0}, std::vector<int64_t>{})},
                {int_attr("noop_with_empty_axes", 1)});
  EXPECT_EQ(e->out("y").shape, (Shape{2, 3, 2}));
  EXPECT_EQ(e->get<float>("y"), x);
}

TEST(Reduce, MaxFloatAndInt) {
  const std::vector<float> x = {1, -2, 3, 4, -5, 6};  // [2,3]
  auto a = run1("ReduceMax", {val("x", {2, 3}, x)}, {ints_attr("axes", {0})});
  EXPECT_EQ(a->out("y").shape, (Shape{1, 3}));
  EXPECT_EQ(a->get<float>("y"), (std::vector<float>{4, -2, 6}));
  auto b = run1("ReduceMax", {val("x", {2, 3}, x), init("axes", {1}, std::vector<int64_t>{1})},
                {int_attr("keepdims", 0)});
  EXPECT_EQ(b->get<float>("y"), (std::vector<float>{3, 6}));
  auto c =
      run1("ReduceMax", {val("x", {2, 3}, std::vector<int64_t>{1, 9, 3, 4, 5, 6})}, {ints_attr("axes", {0})});
  EXPECT_EQ(c->get<int64_t>("y"), (std::vector<int64_t>{4, 9, 6}));
  auto d = run1("ReduceMean", {val("x", {2, 2}, std::vector<int32_t>{1, 2, 4, 4})}, {ints_attr("axes", {1})});
  EXPECT_EQ(d->get<int32_t>("y"), (std::vector<int32_t>{1, 4}));  // integer mean truncates
}

TEST(Reduce, Errors) {
  const std::vector<float> x = {1, 2};
  expect_error(error_of("ReduceMean", "", {val("x", {2}, x), init("axes", {1}, std::vector<int64_t>{0})},
                        {"y"}, {ints_attr("axes", {0})}),
               {"node 'n' (ReduceMean)", "axes", "both"});
  expect_error(error_of("ReduceMax", "", {val("x", {2}, x)}, {"y"}, {ints_attr("axes", {3})}),
               {"node 'n' (ReduceMax)", "axis 3 out of range"});
  expect_error(error_of("ReduceMean", "", {val("x", {2}, x)}, {"y"}, {int_attr("select_last_index", 1)}),
               {"node 'n' (ReduceMean)", "attribute 'select_last_index' is not supported"});
}

// ---- Split, ConstantOfShape, Range, Expand, Tile -----------------------------------------------

TEST(Split, EveryForm) {
  const std::vector<float> x = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};  // [2,6]
  // Opset 13+: split input.
  auto a = run_node("Split", "", {val("x", {2, 6}, x), init("s", {2}, std::vector<int64_t>{2, 4})},
                    {"p", "q"}, {int_attr("axis", 1)});
  EXPECT_EQ(a->out("p").shape, (Shape{2, 2}));
  EXPECT_EQ(a->get<float>("p"), (std::vector<float>{0, 1, 6, 7}));
  EXPECT_EQ(a->get<float>("q"), (std::vector<float>{2, 3, 4, 5, 8, 9, 10, 11}));
  // Opset < 13: split attribute, negative axis.
  auto b = run_node("Split", "", {val("x", {2, 6}, x)}, {"p", "q", "r"},
                    {int_attr("axis", -1), ints_attr("split", {1, 1, 4})});
  EXPECT_EQ(b->get<float>("q"), (std::vector<float>{1, 7}));
  EXPECT_EQ(b->get<float>("r"), (std::vector<float>{2, 3, 4, 5, 8, 9, 10, 11}));
  // Opset 18: num_outputs, uneven (ceil(6 / 4) = 2: 2, 2, 2, 0).
  auto c = run_node("Split", "", {val("x", {2, 6}, x)}, {"p", "q", "r", "s"},
                    {int_attr("axis", 1), int_attr("num_outputs", 4)});
  EXPECT_EQ(c->get<float>("r"), (std::vector<float>{4, 5, 10, 11}));
  EXPECT_EQ(c->out("s").shape, (Shape{2, 0}));
  auto c2 = run_node("Split", "", {val("x", {2, 6}, x)}, {"p", "q"},
                     {int_attr("axis", 1), int_attr("num_outputs", 2)});
  EXPECT_EQ(c2->get<float>("q"), (std::vector<float>{3, 4, 5, 9, 10, 11}));
  // Equal split over the default axis 0, int64 data.
  auto d = run_node("Split", "", {val("x", {2, 3}, std::vector<int64_t>{1, 2, 3, 4, 5, 6})}, {"p", "q"});
  EXPECT_EQ(d->get<int64_t>("p"), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(d->get<int64_t>("q"), (std::vector<int64_t>{4, 5, 6}));
}

TEST(Split, Errors) {
  const std::vector<float> x = {0, 1, 2, 3, 4, 5};
  expect_error(error_of("Split", "", {val("x", {6}, x), init("s", {2}, std::vector<int64_t>{3, 3})},
                        {"p", "q"}, {int_attr("num_outputs", 2)}),
               {"node 'n' (Split)", "'num_outputs'"});
  expect_error(error_of("Split", "", {val("x", {6}, x)}, {"p", "q"}, {int_attr("num_outputs", 3)}),
               {"node 'n' (Split)", "'num_outputs' = 3", "2 outputs"});
  expect_error(
      error_of("Split", "", {val("x", {6}, x), init("s", {2}, std::vector<int64_t>{2, 3})}, {"p", "q"}),
      {"node 'n' (Split)", "add up to 5"});
  expect_error(error_of("Split", "", {val("x", {5}, std::vector<float>(5))}, {"p", "q"}),
               {"node 'n' (Split)", "does not split evenly"});
}

TEST(ConstantOfShape, ValueDtypes) {
  auto a = run1("ConstantOfShape", {val("s", {2}, std::vector<int64_t>{2, 3})});
  EXPECT_EQ(a->out("y").dtype, graph::DType::kF32);
  EXPECT_EQ(a->get<float>("y"), std::vector<float>(6, 0.0f));
  auto b = run1("ConstantOfShape", {val("s", {1}, std::vector<int64_t>{3})},
                {onnx::tensor_attr("value", DataType::kInt64, {1}, bytes_of(std::vector<int64_t>{-7}))});
  EXPECT_EQ(b->out("y").dtype, graph::DType::kI64);
  EXPECT_EQ(b->get<int64_t>("y"), (std::vector<int64_t>{-7, -7, -7}));
  // An fp16 value becomes an fp32 output (session compute dtype).
  auto c = run1("ConstantOfShape", {init("s", {2}, std::vector<int64_t>{1, 2})},
                {onnx::tensor_attr("value", DataType::kFloat16, {1},
                                   bytes_of(std::vector<uint16_t>{float_to_fp16(1.5f)}))});
  EXPECT_EQ(c->out("y").dtype, graph::DType::kF32);
  EXPECT_EQ(c->out("y").shape, (Shape{1, 2}));
  EXPECT_EQ(c->get<float>("y"), (std::vector<float>{1.5f, 1.5f}));
  auto d = run1("ConstantOfShape", {val("s", {0}, std::vector<int64_t>{})},
                {onnx::tensor_attr("value", DataType::kBool, {1}, B{1})});
  EXPECT_EQ(d->out("y").shape, (Shape{}));
  EXPECT_EQ(d->get<uint8_t>("y"), (B{1}));
  auto e = run1("ConstantOfShape", {val("s", {1}, std::vector<int64_t>{2})},
                {onnx::tensor_attr("value", DataType::kInt32, {1}, bytes_of(std::vector<int32_t>{5}))});
  EXPECT_EQ(e->get<int32_t>("y"), (std::vector<int32_t>{5, 5}));
  expect_error(
      error_of("ConstantOfShape", "", {val("s", {1}, std::vector<int64_t>{2})}, {"y"},
               {onnx::tensor_attr("value", DataType::kFloat, {2}, bytes_of(std::vector<float>{1, 2}))}),
      {"node 'n' (ConstantOfShape)", "'value'", "one element"});
  expect_error(error_of("ConstantOfShape", "", {val("s", {1}, std::vector<int64_t>{-2})}, {"y"}),
               {"node 'n' (ConstantOfShape)", "negative dimension -2"});
}

TEST(Range, IntAndFloat) {
  auto a = run1("Range", {val("s", {}, std::vector<int64_t>{1}), val("l", {}, std::vector<int64_t>{10}),
                          val("d", {}, std::vector<int64_t>{3})});
  EXPECT_EQ(a->get<int64_t>("y"), (std::vector<int64_t>{1, 4, 7}));
  auto b = run1("Range", {init("s", {}, std::vector<int32_t>{5}), init("l", {}, std::vector<int32_t>{-1}),
                          init("d", {}, std::vector<int32_t>{-2})});  // folded at load
  EXPECT_EQ(b->get<int32_t>("y"), (std::vector<int32_t>{5, 3, 1}));
  auto c = run1("Range", {val("s", {}, std::vector<float>{0.5f}), val("l", {}, std::vector<float>{2.0f}),
                          val("d", {}, std::vector<float>{0.4f})});
  expect_floats(c->get<float>("y"), {0.5, 0.9, 1.3, 1.7}, 1e-6, "float range");
  auto e = run1("Range", {val("s", {}, std::vector<int64_t>{3}), val("l", {}, std::vector<int64_t>{1}),
                          val("d", {}, std::vector<int64_t>{1})});
  EXPECT_EQ(e->out("y").shape, (Shape{0}));
  expect_error(error_of("Range", "",
                        {val("s", {}, std::vector<int64_t>{3}), val("l", {}, std::vector<int64_t>{1}),
                         val("d", {}, std::vector<int64_t>{0})},
                        {"y"}),
               {"node 'n' (Range)", "delta is 0"});
}

TEST(Expand, BroadcastBothWays) {
  // [3,1] expanded by shape [2,1,4] -> [2,3,4].
  auto a = run1("Expand", {val("x", {3, 1}, std::vector<float>{1, 2, 3}),
                           init("s", {3}, std::vector<int64_t>{2, 1, 4})});
  EXPECT_EQ(a->out("y").shape, (Shape{2, 3, 4}));
  const auto y = a->get<float>("y");
  for (int i = 0; i < 24; ++i) EXPECT_EQ(y[i], float((i / 4) % 3 + 1)) << i;
  // Shape of lower rank than the input, int64 data: [2,3] by [3] -> [2,3].
  auto b = run1("Expand", {val("x", {2, 3}, std::vector<int64_t>{1, 2, 3, 4, 5, 6}),
                           val("s", {1}, std::vector<int64_t>{1})});
  EXPECT_EQ(b->get<int64_t>("y"), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  // Bool row [1,3] -> [2,3].
  auto c = run1("Expand", {val("x", {1, 3}, B{1, 0, 1}), val("s", {2}, std::vector<int64_t>{2, 3})});
  EXPECT_EQ(c->get<uint8_t>("y"), (B{1, 0, 1, 1, 0, 1}));
  expect_error(
      error_of("Expand", "",
               {val("x", {3}, std::vector<float>{1, 2, 3}), val("s", {1}, std::vector<int64_t>{2})}, {"y"}),
      {"node 'n' (Expand)", "cannot be broadcast"});
}

TEST(Tile, Repeats) {
  auto a = run1(
      "Tile", {val("x", {2, 2}, std::vector<float>{1, 2, 3, 4}), init("r", {2}, std::vector<int64_t>{2, 3})});
  EXPECT_EQ(a->out("y").shape, (Shape{4, 6}));
  EXPECT_EQ(a->get<float>("y"), (std::vector<float>{1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4,  //
                                                    1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4}));
  auto b = run1("Tile",
                {val("x", {1, 3}, std::vector<int64_t>{7, 8, 9}), val("r", {2}, std::vector<int64_t>{2, 1})});
  EXPECT_EQ(b->get<int64_t>("y"), (std::vector<int64_t>{7, 8, 9, 7, 8, 9}));
  auto c =
      run1("Tile", {val("x", {3}, std::vector<int32_t>{1, 2, 3}), val("r", {1}, std::vector<int64_t>{0})});
  EXPECT_EQ(c->out("y").shape, (Shape{0}));
  expect_error(
      error_of("Tile", "",
               {val("x", {3}, std::vector<float>{1, 2, 3}), val("r", {2}, std::vector<int64_t>{1, 1})},
               {"y"}),
      {"node 'n' (Tile)", "repeats"});
}

// ---- LayerNormalization, SkipLayerNormalization -------------------------------------------------

// Reference over rows of n: (x - mean) / sqrt(var + eps) * g + b, in double.
void ln_ref(const std::vector<double>& x, const std::vector<float>& g, const std::vector<float>* b, int64_t n,
            double eps, std::vector<double>& y, std::vector<double>& mean, std::vector<double>& inv) {
  const int64_t rows = static_cast<int64_t>(x.size()) / n;
  y.resize(x.size());
  mean.assign(rows, 0);
  inv.assign(rows, 0);
  for (int64_t r = 0; r < rows; ++r) {
    double m = 0, v = 0;
    for (int64_t i = 0; i < n; ++i) m += x[r * n + i];
    m /= n;
    for (int64_t i = 0; i < n; ++i) v += (x[r * n + i] - m) * (x[r * n + i] - m);
    v /= n;
    mean[r] = m;
    inv[r] = 1.0 / std::sqrt(v + eps);
    for (int64_t i = 0; i < n; ++i) y[r * n + i] = (x[r * n + i] - m) * inv[r] * g[i] + (b ? (*b)[i] : 0.0f);
  }
}

TEST(LayerNorm, LastAxisWithStats) {
  const int64_t R = 3, H = 16;
  const auto x = random_floats(R * H, 41), g = random_floats(H, 42), b = random_floats(H, 43);
  auto r = run_node("LayerNormalization", "", {val("x", {R, H}, x), init("g", {H}, g), init("b", {H}, b)},
                    {"y", "mean", "inv"}, {float_attr("epsilon", 1e-5f)});
  std::vector<double> y, m, inv;
  ln_ref(std::vector<double>(x.begin(), x.end()), g, &b, H, 1e-5, y, m, inv);
  expect_floats(r->get<float>("y"), y, 2e-5, "y");
  EXPECT_EQ(r->out("mean").shape, (Shape{R, 1}));
  expect_floats(r->get<float>("mean"), m, 1e-6, "mean");
  expect_floats(r->get<float>("inv"), inv, 2e-5, "inv");
}

TEST(LayerNorm, Axis1NoBiasFp16Scale) {
  // [2,3,4] normalized over the last two axes (12 elements); fp16 scale widened at load.
  const auto x = random_floats(24, 51);
  const auto g = random_floats(12, 52);
  std::vector<uint16_t> g16;
  std::vector<float> g_rounded;
  for (float v : g) {
    g16.push_back(float_to_fp16(v));
    g_rounded.push_back(fp16_to_float(g16.back()));
  }
  Value gv{"g", DataType::kFloat16, {3, 4}, bytes_of(g16), true};
  auto r = run_node("LayerNormalization", "", {val("x", {2, 3, 4}, x), gv}, {"y", "", "inv"},
                    {int_attr("axis", 1)});
  std::vector<double> y, m, inv;
  ln_ref(std::vector<double>(x.begin(), x.end()), g_rounded, nullptr, 12, 1e-5, y, m, inv);
  expect_floats(r->get<float>("y"), y, 2e-5, "y");
  EXPECT_EQ(r->out("inv").shape, (Shape{2, 1, 1}));
  expect_floats(r->get<float>("inv"), inv, 2e-5, "inv");
}

TEST(LayerNorm, Errors) {
  const auto x = random_floats(8, 1);
  expect_error(
      error_of("LayerNormalization", "", {val("x", {2, 4}, x), init("g", {4}, std::vector<float>(4, 1))},
               {"y"}, {int_attr("stash_type", 16)}),
      {"node 'n' (LayerNormalization)", "'stash_type' = 16"});
  expect_error(error_of("LayerNormalization", "",
                        {val("x", {2, 4}, x), init("g", {3}, std::vector<float>(3, 1))}, {"y"}),
               {"node 'n' (LayerNormalization)", "4 elements"});
  expect_error(
      error_of("LayerNormalization", "", {val("x", {2, 4}, x), init("g", {4}, std::vector<float>(4, 1))},
               {"y"}, {int_attr("axis", 5)}),
      {"node 'n' (LayerNormalization)", "axis 5 out of range"});
}

TEST(SkipLayerNorm, AllOutputsBiasBetaBroadcastSkip) {
  const int64_t Bt = 2, S = 3, H = 8;
  const auto x = random_floats(Bt * S * H, 61), skip = random_floats(S * H, 62), g = random_floats(H, 63),
             beta = random_floats(H, 64), bias = random_floats(H, 65);
  // skip [S,H] broadcasts over the batch.
  auto r = run_node("SkipLayerNormalization", "com.microsoft",
                    {val("x", {Bt, S, H}, x), val("skip", {S, H}, skip), init("g", {H}, g),
                     init("beta", {H}, beta), init("bias", {H}, bias)},
                    {"y", "mean", "inv", "sum"}, {float_attr("epsilon", 1e-6f)}, 2);
  std::vector<double> sum(x.size());
  for (size_t i = 0; i < x.size(); ++i) sum[i] = double(x[i]) + skip[i % (S * H)] + bias[i % H];
  std::vector<double> y, m, inv;
  ln_ref(sum, g, &beta, H, 1e-6, y, m, inv);
  expect_floats(r->get<float>("sum"), sum, 1e-6, "sum");
  expect_floats(r->get<float>("y"), y, 2e-5, "y");
  EXPECT_EQ(r->out("mean").shape, (Shape{Bt, S, 1}));
  expect_floats(r->get<float>("mean"), m, 1e-6, "mean");
  expect_floats(r->get<float>("inv"), inv, 2e-5, "inv");
  // Without beta and bias, only output 0.
  auto r2 = run_node("SkipLayerNormalization", "com.microsoft",
                     {val("x", {S, H}, std::vector<float>(x.begin(), x.begin() + S * H)),
                      val("skip", {S, H}, skip), init("g", {H}, g)},
                     {"y"});
  std::vector<double> sum2(S * H);
  for (int64_t i = 0; i < S * H; ++i) sum2[i] = double(x[i]) + skip[i];
  ln_ref(sum2, g, nullptr, H, 1e-12, y, m, inv);
  expect_floats(r2->get<float>("y"), y, 2e-5, "y no beta");
}

TEST(SkipLayerNorm, Errors) {
  const auto x = random_floats(8, 1);
  expect_error(error_of("SkipLayerNormalization", "com.microsoft",
                        {val("x", {2, 4}, x), val("skip", {2, 3}, std::vector<float>(6)),
                         init("g", {4}, std::vector<float>(4, 1))},
                        {"y"}),
               {"node 'n' (SkipLayerNormalization)", "skip [2,3]"});
  expect_error(
      error_of("SkipLayerNormalization", "com.microsoft",
               {val("x", {2, 4}, x), val("skip", {2, 4}, x), init("g", {4}, std::vector<float>(4, 1))}, {"y"},
               {float_attr("epsilon", 1e-5f), int_attr("simplified", 1)}),
      {"node 'n' (SkipLayerNormalization)", "attribute 'simplified' is not supported"});
}

// ---- allocation-free steady state ------------------------------------------------------------------

TEST(GenericOps, RunsAllocateNothingAfterWarmUp) {
  // A mask-and-norm chain like the builder's: Range -> Less -> Where -> Softmax -> Split -> Max, plus
  // LayerNormalization, SkipLayerNormalization, ReduceMean, Expand, Tile, Pow and Gelu.
  onnx::ModelWriter w;
  w.add_opset("", 21);
  w.add_opset("com.microsoft", 1);
  const int64_t H = 8;
  w.add_input("x", DataType::kFloat, {onnx::dim_value(4), onnx::dim_value(H)});
  w.add_input("n", DataType::kInt64, {});
  auto i64 = [](std::vector<int64_t> v) { return bytes_of(v); };
  w.add_initializer("zero", DataType::kInt64, {}, i64({0}));
  w.add_initializer("one", DataType::kInt64, {}, i64({1}));
  w.add_initializer("two", DataType::kFloat, {}, bytes_of(std::vector<float>{2.0f}));
  w.add_initializer("g", DataType::kFloat, {H}, bytes_of(random_floats(H, 7)));
  w.add_initializer("shape", DataType::kInt64, {2}, i64({4, H}));
  w.add_initializer("reps", DataType::kInt64, {2}, i64({1, 2}));
  w.add_initializer("axes", DataType::kInt64, {1}, i64({1}));
  w.add_node("Range", "", "range", {"zero", "n", "one"}, {"r"});
  w.add_node("Cast", "", "cast", {"r"}, {"rf"}, {int_attr("to", 1)});
  w.add_node("Expand", "", "expand", {"rf", "shape"}, {"re"});  // needs n == H
  w.add_node("Less", "", "less", {"re", "x"}, {"m"});
  w.add_node("Where", "", "where", {"m", "x", "re"}, {"wx"});
  w.add_node("Softmax", "", "softmax", {"wx"}, {"sm"});
  w.add_node("LayerNormalization", "", "ln", {"sm", "g"}, {"ln"});
  w.add_node("SkipLayerNormalization", "com.microsoft", "sln", {"ln", "x", "g"}, {"sln", "", "", "sum"});
  w.add_node("Pow", "", "pow", {"sln", "two"}, {"p"});
  w.add_node("Gelu", "", "gelu", {"p"}, {"ge"});
  w.add_node("ReduceMean", "", "rm", {"ge", "axes"}, {"mean"});
  w.add_node("Tile", "", "tile", {"mean", "reps"}, {"t"});
  w.add_node("Split", "", "split", {"t"}, {"s0", "s1"}, {int_attr("axis", 1), int_attr("num_outputs", 2)});
  w.add_node("Max", "", "max", {"s0", "s1", "sum"}, {"y"});
  w.add_output("y", DataType::kFloat, {});
  graph::SessionOptions opt;
  opt.threads = 2;
  auto s = load_written(w, opt);
  auto x = random_floats(4 * H, 8);
  int64_t n = H;
  s->bind_input("x", {graph::DType::kF32, {4, H}, x.data()});
  s->bind_input("n", {graph::DType::kI64, {}, &n});
  s->run();
  EXPECT_EQ(s->output("y").shape, (Shape{4, H}));
  const int64_t before = allocation_count();
  for (int i = 0; i < 5; ++i) s->run();
  EXPECT_EQ(allocation_count() - before, 0);
}

}  // namespace
}  // namespace nbits::testing
