// The ops torch.onnx.export / Optimum / onnxruntime quantize_dynamic put in decoders beyond the
// builder's (scatter_gather.cc: Trilu, ScatterND, GatherElements, CumSum; einsum.cc;
// quantize_dynamic.cc: DynamicQuantizeLinear; matmul_integer.cc: MatMulInteger), each as a
// one-node model: values against the ONNX spec's examples and hand-computed references,
// negative axes and indices, empty tensors, every dtype exporters use, attribute and shape
// errors refused with one line naming the node, int64 overflow in shape arithmetic refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>

#include "graph/op.h"
#include "model_file.h"

namespace nbits::testing {
namespace {

using graph::Shape;
using onnx::DataType;
using onnx::int_attr;
using onnx::string_attr;

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
  if constexpr (std::is_same_v<T, int8_t>) return DataType::kInt8;
  if constexpr (std::is_same_v<T, uint8_t>) return DataType::kUint8;
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
// bool tensors (0/1 bytes)
Value bools(std::string name, std::vector<int64_t> dims, std::vector<uint8_t> v) {
  return {std::move(name), DataType::kBool, std::move(dims), std::move(v), false};
}
// A graph input declared (and bound) with `dims` over a tiny buffer: for shape-overflow checks,
// which throw in infer before any element is read.
Value huge(std::string name, DataType dt, std::vector<int64_t> dims) {
  return {std::move(name), dt, std::move(dims), std::vector<uint8_t>(64), false};
}

using F = std::vector<float>;
using I64 = std::vector<int64_t>;
using I32 = std::vector<int32_t>;
using U8 = std::vector<uint8_t>;
using I8 = std::vector<int8_t>;

struct Run {
  std::vector<Value> ins;
  std::unique_ptr<graph::Session> s;
  const graph::Tensor& out(const char* name) const { return s->output(name); }
  template <typename T>
  std::vector<T> get(const char* name) const {
    const graph::Tensor& t = s->output(name);
    return std::vector<T>(t.as<T>(), t.as<T>() + t.numel());
  }
};

std::unique_ptr<Run> run_node(const std::string& op, std::vector<Value> ins, std::vector<std::string> outs,
                              std::vector<onnx::WriterAttr> attrs = {}, int threads = 1) {
  auto r = std::make_unique<Run>();
  r->ins = std::move(ins);
  onnx::ModelWriter w;
  w.add_opset("", 18);
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
  w.add_node(op, "", "n", names, outs, std::move(attrs));
  for (const std::string& o : outs)
    if (!o.empty()) w.add_output(o, DataType::kUndefined, {});
  graph::SessionOptions opt;
  opt.threads = threads;
  r->s = load_written(w, opt);
  for (Value& v : r->ins) {
    if (v.init || v.name.empty()) continue;
    graph::Shape sh;
    for (int64_t d : v.dims) sh.push_back(d);
    r->s->bind_input(v.name, {*graph::to_dtype(v.dt), sh, v.bytes.data()});
  }
  r->s->run();
  return r;
}

std::unique_ptr<Run> run1(const std::string& op, std::vector<Value> ins,
                          std::vector<onnx::WriterAttr> attrs = {}) {
  return run_node(op, std::move(ins), {"y"}, std::move(attrs));
}

std::string error_of(const std::string& op, std::vector<Value> ins, std::vector<onnx::WriterAttr> attrs = {},
                     std::vector<std::string> outs = {"y"}) {
  try {
    run_node(op, std::move(ins), std::move(outs), std::move(attrs));
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();

// ---- Trilu ------------------------------------------------------------------------------------

// x = 0..11 as [3,4]; reference mask by j - i against k.
F trilu_ref(const F& x, int64_t rows, int64_t cols, int64_t k, bool upper) {
  F y(x.size());
  for (size_t e = 0; e < x.size(); ++e) {
    const int64_t j = static_cast<int64_t>(e) % cols, i = (static_cast<int64_t>(e) / cols) % rows;
    const bool keep = upper ? (j - i >= k) : (j - i <= k);
    y[e] = keep ? x[e] : 0.0f;
  }
  return y;
}

TEST(Trilu, UpperLowerEveryDiagonal) {
  F x(2 * 3 * 4);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i + 1);
  // Default: upper, k = 0.
  auto d = run1("Trilu", {val("x", {2, 3, 4}, x)});
  EXPECT_EQ(d->out("y").shape, (Shape{2, 3, 4}));
  EXPECT_EQ(d->get<float>("y"), trilu_ref(x, 3, 4, 0, true));
  for (int64_t k : {-4, -3, -1, 0, 1, 2, 3, 4, 5}) {
    for (int upper : {0, 1}) {
      auto r = run1("Trilu", {val("x", {2, 3, 4}, x), val("k", {}, I64{k})}, {int_attr("upper", upper)});
      EXPECT_EQ(r->get<float>("y"), trilu_ref(x, 3, 4, k, upper != 0)) << "k " << k << " upper " << upper;
    }
  }
}

TEST(Trilu, ExtremeKNeverOverflows) {
  F x = {1, 2, 3, 4, 5, 6};  // [2,3]
  const F zeros(6, 0.0f);
  EXPECT_EQ(run1("Trilu", {val("x", {2, 3}, x), val("k", {}, I64{kI64Min})})->get<float>("y"), x);
  EXPECT_EQ(run1("Trilu", {val("x", {2, 3}, x), val("k", {}, I64{kI64Max})})->get<float>("y"), zeros);
  EXPECT_EQ(run1("Trilu", {val("x", {2, 3}, x), val("k", {1}, I64{kI64Max})}, {int_attr("upper", 0)})
                ->get<float>("y"),
            x);
  EXPECT_EQ(run1("Trilu", {val("x", {2, 3}, x), val("k", {}, I64{kI64Min})}, {int_attr("upper", 0)})
                ->get<float>("y"),
            zeros);
}

TEST(Trilu, IntBoolAndEmpty) {
  // torch.triu on an int64 and a bool mask (square: the causal mask).
  auto i = run1("Trilu", {val("x", {3, 3}, I64{1, 2, 3, 4, 5, 6, 7, 8, 9}), val("k", {}, I64{1})});
  EXPECT_EQ(i->get<int64_t>("y"), (I64{0, 2, 3, 0, 0, 6, 0, 0, 0}));
  auto b = run1("Trilu", {bools("x", {2, 2}, U8{1, 1, 1, 1})}, {int_attr("upper", 0)});
  EXPECT_EQ(b->out("y").dtype, graph::DType::kBool);
  EXPECT_EQ(b->get<uint8_t>("y"), (U8{1, 0, 1, 1}));
  auto i32 = run1("Trilu", {val("x", {1, 2, 2}, I32{5, 6, 7, 8})});
  EXPECT_EQ(i32->get<int32_t>("y"), (I32{5, 6, 0, 8}));
  EXPECT_EQ(run1("Trilu", {val("x", {0, 3, 3}, F{})})->out("y").shape, (Shape{0, 3, 3}));
  EXPECT_EQ(run1("Trilu", {val("x", {2, 0}, F{})})->out("y").shape, (Shape{2, 0}));
  EXPECT_EQ(run1("Trilu", {val("x", {0, 4}, F{}), val("k", {}, I64{-2})})->out("y").numel(), 0);
}

TEST(Trilu, Errors) {
  expect_error(error_of("Trilu", {val("x", {3}, F{1, 2, 3})}), {"node 'n' (Trilu)", "rank >= 2"});
  expect_error(error_of("Trilu", {val("x", {2, 2}, F{1, 2, 3, 4})}, {int_attr("upper", 2)}),
               {"node 'n' (Trilu)", "'upper' must be 0 or 1"});
  expect_error(error_of("Trilu", {val("x", {2, 2}, F{1, 2, 3, 4}), val("k", {}, I32{1})}),
               {"node 'n' (Trilu)", "k"});
  expect_error(error_of("Trilu", {val("x", {2, 2}, F{1, 2, 3, 4}), val("k", {2}, I64{1, 2})}),
               {"node 'n' (Trilu)", "one value"});
  expect_error(error_of("Trilu", {val("x", {2, 2}, F{1, 2, 3, 4})}, {int_attr("lower", 1)}),
               {"node 'n' (Trilu)", "attribute 'lower' is not supported"});
}

// ---- ScatterND --------------------------------------------------------------------------------

TEST(ScatterND, SpecExamplesAndNegativeIndices) {
  // ONNX example 1: data [8], indices [[4],[3],[1],[7]], updates [9,10,11,12].
  auto r = run1("ScatterND", {val("d", {8}, F{1, 2, 3, 4, 5, 6, 7, 8}), val("i", {4, 1}, I64{4, 3, 1, 7}),
                              val("u", {4}, F{9, 10, 11, 12})});
  EXPECT_EQ(r->get<float>("y"), (F{1, 11, 3, 10, 9, 6, 7, 12}));
  // ONNX example 2: data [4,4,4], indices [[0],[2]], updates [2,4,4] (whole slices).
  F d(64);
  for (int i = 0; i < 64; ++i) d[static_cast<size_t>(i)] = static_cast<float>(i);
  F u(32);
  for (int i = 0; i < 32; ++i) u[static_cast<size_t>(i)] = -1.0f - static_cast<float>(i);
  auto s = run1("ScatterND", {val("d", {4, 4, 4}, d), val("i", {2, 1}, I64{0, 2}), val("u", {2, 4, 4}, u)});
  F want = d;
  for (int i = 0; i < 16; ++i) {
    want[static_cast<size_t>(i)] = u[static_cast<size_t>(i)];
    want[static_cast<size_t>(32 + i)] = u[static_cast<size_t>(16 + i)];
  }
  EXPECT_EQ(s->get<float>("y"), want);
  // Element tuples, negative indices count from the end: (-1, 0) is (1, 0).
  auto e = run1("ScatterND", {val("d", {2, 3}, I64{0, 0, 0, 0, 0, 0}), val("i", {2, 2}, I64{0, 2, -1, 0}),
                              val("u", {2}, I64{7, 8})});
  EXPECT_EQ(e->get<int64_t>("y"), (I64{0, 0, 7, 8, 0, 0}));
  // The exporters' mask[:, :, :, :n] = ... form: indices [1,1,2,2] over a bool [1,1,2,2].
  auto b = run1("ScatterND", {bools("d", {1, 1, 2, 2}, U8{0, 0, 0, 0}), val("i", {1, 1, 1, 3}, I64{0, 0, 1}),
                              bools("u", {1, 1, 1, 2}, U8{1, 1})});
  EXPECT_EQ(b->get<uint8_t>("y"), (U8{0, 0, 1, 1}));
}

TEST(ScatterND, ReductionsAndEmpty) {
  const F d = {1, 2, 3, 4};
  auto add =
      run1("ScatterND", {val("d", {4}, d), val("i", {3, 1}, I64{1, 1, 3}), val("u", {3}, F{10, 20, 5})},
           {string_attr("reduction", "add")});
  EXPECT_EQ(add->get<float>("y"), (F{1, 32, 3, 9}));
  auto mul = run1("ScatterND",
                  {val("d", {4}, I64{1, 2, 3, 4}), val("i", {2, 1}, I64{0, 0}), val("u", {2}, I64{3, 5})},
                  {string_attr("reduction", "mul")});
  EXPECT_EQ(mul->get<int64_t>("y"), (I64{15, 2, 3, 4}));
  auto mx = run1("ScatterND",
                 {val("d", {4}, I32{1, 2, 3, 4}), val("i", {2, 1}, I64{2, 3}), val("u", {2}, I32{9, 0})},
                 {string_attr("reduction", "max")});
  EXPECT_EQ(mx->get<int32_t>("y"), (I32{1, 2, 9, 4}));
  auto mn = run1("ScatterND", {val("d", {4}, d), val("i", {2, 1}, I64{2, 3}), val("u", {2}, F{9, 0})},
                 {string_attr("reduction", "min")});
  EXPECT_EQ(mn->get<float>("y"), (F{1, 2, 3, 0}));
  // No index tuples: the output is the data.
  auto none = run1("ScatterND", {val("d", {2, 2}, d), val("i", {0, 1}, I64{}), val("u", {0, 2}, F{})});
  EXPECT_EQ(none->get<float>("y"), d);
  // Empty data (a zero-length slice) with tuples.
  auto z = run1("ScatterND", {val("d", {2, 0}, F{}), val("i", {1, 1}, I64{1}), val("u", {1, 0}, F{})});
  EXPECT_EQ(z->out("y").shape, (Shape{2, 0}));
}

TEST(ScatterND, Errors) {
  const F d = {1, 2, 3, 4};
  expect_error(error_of("ScatterND", {val("d", {4}, d), val("i", {1, 1}, I64{4}), val("u", {1}, F{0})}),
               {"node 'n' (ScatterND)", "index 4 out of range [-4, 4)"});
  expect_error(error_of("ScatterND", {val("d", {4}, d), val("i", {1, 1}, I64{-5}), val("u", {1}, F{0})}),
               {"node 'n' (ScatterND)", "index -5 out of range"});
  expect_error(
      error_of("ScatterND", {val("d", {4}, d), val("i", {2, 1}, I64{0, 1}), val("u", {3}, F{0, 0, 0})}),
      {"node 'n' (ScatterND)", "updates [3] must have shape [2]"});
  expect_error(error_of("ScatterND", {val("d", {4}, d), val("i", {1, 2}, I64{0, 1}), val("u", {1}, F{0})}),
               {"node 'n' (ScatterND)", "last dim 2"});
  expect_error(error_of("ScatterND", {val("d", {4}, d), val("i", {1, 1}, I64{0}), val("u", {1}, F{0})},
                        {string_attr("reduction", "mean")}),
               {"node 'n' (ScatterND)", "'reduction' = 'mean'"});
  expect_error(error_of("ScatterND", {val("d", {4}, d), val("i", {1, 1}, I64{0}), val("u", {1}, I64{0})}),
               {"node 'n' (ScatterND)", "updates dtype int64 differs"});
  expect_error(
      error_of("ScatterND", {bools("d", {2}, U8{0, 1}), val("i", {1, 1}, I64{0}), bools("u", {1}, U8{1})},
               {string_attr("reduction", "add")}),
      {"node 'n' (ScatterND)", "bool"});
}

// ---- GatherElements ---------------------------------------------------------------------------

TEST(GatherElements, SpecExamplesNegativeAxisAndIndices) {
  // ONNX example 1: axis 1.
  auto r = run1("GatherElements", {val("x", {2, 2}, F{1, 2, 3, 4}), val("i", {2, 2}, I64{0, 0, 1, 0})},
                {int_attr("axis", 1)});
  EXPECT_EQ(r->get<float>("y"), (F{1, 1, 4, 3}));
  // ONNX example 2: axis 0, indices [2,3] over data [3,3].
  const F x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  auto s = run1("GatherElements", {val("x", {3, 3}, x), val("i", {2, 3}, I64{1, 2, 0, 2, 0, 0})});
  EXPECT_EQ(s->out("y").shape, (Shape{2, 3}));
  EXPECT_EQ(s->get<float>("y"), (F{4, 8, 3, 7, 2, 3}));
  // axis -1 == 1, negative indices, int32 indices, fewer columns than the data.
  auto n =
      run1("GatherElements", {val("x", {3, 3}, x), val("i", {3, 1}, I32{-1, 0, -3})}, {int_attr("axis", -1)});
  EXPECT_EQ(n->get<float>("y"), (F{3, 4, 7}));
  // int64 data in rank 3 (torch.gather of ids), axis 2.
  auto t = run1("GatherElements",
                {val("x", {1, 2, 3}, I64{10, 11, 12, 20, 21, 22}), val("i", {1, 2, 2}, I64{2, 0, 1, 1})},
                {int_attr("axis", 2)});
  EXPECT_EQ(t->get<int64_t>("y"), (I64{12, 10, 21, 21}));
  EXPECT_EQ(run1("GatherElements", {val("x", {3, 3}, x), val("i", {0, 3}, I64{})})->out("y").shape,
            (Shape{0, 3}));
}

TEST(GatherElements, Errors) {
  const F x = {1, 2, 3, 4};
  expect_error(error_of("GatherElements", {val("x", {2, 2}, x), val("i", {1, 1}, I64{2})}),
               {"node 'n' (GatherElements)", "index 2 out of range [-2, 2)"});
  expect_error(error_of("GatherElements", {val("x", {2, 2}, x), val("i", {2}, I64{0, 1})}),
               {"node 'n' (GatherElements)", "same rank"});
  expect_error(error_of("GatherElements", {val("x", {2, 2}, x), val("i", {1, 3}, I64{0, 0, 0})}),
               {"node 'n' (GatherElements)", "exceed data"});
  expect_error(
      error_of("GatherElements", {val("x", {2, 2}, x), val("i", {1, 1}, I64{0})}, {int_attr("axis", 2)}),
      {"node 'n' (GatherElements)", "axis 2 out of range for rank 2"});
  expect_error(error_of("GatherElements", {val("x", {2, 2}, x), val("i", {1, 1}, F{0})}),
               {"node 'n' (GatherElements)", "indices"});
}

// ---- CumSum -----------------------------------------------------------------------------------

TEST(CumSum, ExclusiveReverseEveryDtype) {
  const F x = {1, 2, 3, 4, 5};
  auto ax = [](int64_t a) { return val("a", {}, I64{a}); };
  EXPECT_EQ(run1("CumSum", {val("x", {5}, x), ax(0)})->get<float>("y"), (F{1, 3, 6, 10, 15}));
  EXPECT_EQ(run1("CumSum", {val("x", {5}, x), ax(0)}, {int_attr("exclusive", 1)})->get<float>("y"),
            (F{0, 1, 3, 6, 10}));
  EXPECT_EQ(run1("CumSum", {val("x", {5}, x), ax(0)}, {int_attr("reverse", 1)})->get<float>("y"),
            (F{15, 14, 12, 9, 5}));
  EXPECT_EQ(run1("CumSum", {val("x", {5}, x), ax(-1)}, {int_attr("reverse", 1), int_attr("exclusive", 1)})
                ->get<float>("y"),
            (F{14, 12, 9, 5, 0}));
  // [2,3]: axis 0, axis 1 and axis -1; int32 axis input.
  const I64 m = {1, 2, 3, 4, 5, 6};
  EXPECT_EQ(run1("CumSum", {val("x", {2, 3}, m), ax(0)})->get<int64_t>("y"), (I64{1, 2, 3, 5, 7, 9}));
  EXPECT_EQ(run1("CumSum", {val("x", {2, 3}, m), ax(1)})->get<int64_t>("y"), (I64{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(run1("CumSum", {val("x", {2, 3}, m), val("a", {1}, I32{-1})})->get<int64_t>("y"),
            (I64{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(run1("CumSum", {val("x", {3}, I32{1, 1, 1}), ax(0)})->get<int32_t>("y"), (I32{1, 2, 3}));
  // position_ids = attention_mask.cumsum(-1) - 1 with left padding.
  EXPECT_EQ(run1("CumSum", {val("x", {1, 5}, I64{0, 0, 1, 1, 1}), ax(-1)})->get<int64_t>("y"),
            (I64{0, 0, 1, 2, 3}));
  EXPECT_EQ(run1("CumSum", {val("x", {2, 0}, F{}), ax(1)})->out("y").shape, (Shape{2, 0}));
  EXPECT_EQ(run1("CumSum", {val("x", {0, 3}, F{}), ax(0)})->out("y").shape, (Shape{0, 3}));
  // int64 sums wrap (two's complement), as ONNX Runtime's.
  EXPECT_EQ(run1("CumSum", {val("x", {2}, I64{kI64Max, 1}), ax(0)})->get<int64_t>("y"),
            (I64{kI64Max, kI64Min}));
}

TEST(CumSum, Errors) {
  const F x = {1, 2};
  expect_error(error_of("CumSum", {val("x", {2}, x), val("a", {}, I64{1})}),
               {"node 'n' (CumSum)", "axis 1 out of range for rank 1"});
  expect_error(error_of("CumSum", {val("x", {2}, x), val("a", {2}, I64{0, 0})}),
               {"node 'n' (CumSum)", "axis must be a scalar"});
  expect_error(error_of("CumSum", {val("x", {2}, x), val("a", {}, I64{0})}, {int_attr("exclusive", 2)}),
               {"node 'n' (CumSum)", "'exclusive' must be 0 or 1"});
  expect_error(error_of("CumSum", {val("x", {2}, x), val("a", {}, F{0})}), {"node 'n' (CumSum)", "axis"});
  expect_error(error_of("CumSum", {bools("x", {2}, U8{0, 1}), val("a", {}, I64{0})}),
               {"node 'n' (CumSum)", "bool"});
}

// ---- Einsum -----------------------------------------------------------------------------------

TEST(Einsum, ExporterEquations) {
  // torch.outer / the rotary frequencies: "i,j->ij".
  auto o = run1("Einsum", {val("a", {3}, F{0, 1, 2}), val("b", {2}, F{1, 0.5f})},
                {string_attr("equation", "i,j->ij")});
  EXPECT_EQ(o->out("y").shape, (Shape{3, 2}));
  EXPECT_EQ(o->get<float>("y"), (F{0, 0, 1, 0.5f, 2, 1}));
  // "bi,j->bij" (position ids [1,2] x inv_freq [2]).
  auto p = run1("Einsum", {val("a", {1, 2}, F{3, 4}), val("b", {2}, F{1, 2})},
                {string_attr("equation", "bi,j->bij")});
  EXPECT_EQ(p->out("y").shape, (Shape{1, 2, 2}));
  EXPECT_EQ(p->get<float>("y"), (F{3, 6, 4, 8}));
  // Attention scores "bhqd,bhkd->bhqk" against a direct loop.
  const int64_t B = 1, H = 2, Q = 3, K = 4, D = 5;
  const F q = random_floats(B * H * Q * D, 1), k = random_floats(B * H * K * D, 2);
  auto s = run1("Einsum", {val("q", {B, H, Q, D}, q), val("k", {B, H, K, D}, k)},
                {string_attr("equation", "bhqd,bhkd->bhqk")});
  EXPECT_EQ(s->out("y").shape, (Shape{B, H, Q, K}));
  const F got = s->get<float>("y");
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < Q; ++i)
      for (int64_t j = 0; j < K; ++j) {
        double acc = 0;
        for (int64_t d = 0; d < D; ++d) acc += double(q[(h * Q + i) * D + d]) * k[(h * K + j) * D + d];
        EXPECT_NEAR(got[static_cast<size_t>((h * Q + i) * K + j)], acc, 1e-5);
      }
}

TEST(Einsum, ImplicitTransposeDiagonalReduceInt) {
  const F a = {1, 2, 3, 4, 5, 6};  // [2,3]
  const F b = {1, 0, 0, 1, 1, 1};  // [3,2]
  EXPECT_EQ(run1("Einsum", {val("a", {2, 3}, a), val("b", {3, 2}, b)}, {string_attr("equation", "ij,jk")})
                ->get<float>("y"),
            (F{4, 5, 10, 11}));
  auto t = run1("Einsum", {val("a", {2, 3}, a)}, {string_attr("equation", "ij->ji")});
  EXPECT_EQ(t->out("y").shape, (Shape{3, 2}));
  EXPECT_EQ(t->get<float>("y"), (F{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(
      run1("Einsum", {val("a", {2, 2}, F{1, 2, 3, 4})}, {string_attr("equation", "ii->i")})->get<float>("y"),
      (F{1, 4}));
  EXPECT_EQ(
      run1("Einsum", {val("a", {2, 2}, F{1, 2, 3, 4})}, {string_attr("equation", "ii")})->get<float>("y"),
      (F{5}));  // implicit: trace
  auto r = run1("Einsum", {val("a", {2, 3}, a)}, {string_attr("equation", "ij->")});
  EXPECT_EQ(r->out("y").shape, (Shape{}));
  EXPECT_EQ(r->get<float>("y"), (F{21}));
  EXPECT_EQ(run1("Einsum", {val("a", {2, 3}, I64{1, 2, 3, 4, 5, 6})}, {string_attr("equation", " i j -> i ")})
                ->get<int64_t>("y"),
            (I64{6, 15}));
  // Empty: a summed label of size 0 gives zeros; an output label of size 0 an empty output.
  EXPECT_EQ(
      run1("Einsum", {val("a", {2, 0}, F{}), val("b", {0, 2}, F{})}, {string_attr("equation", "ij,jk->ik")})
          ->get<float>("y"),
      (F{0, 0, 0, 0}));
  EXPECT_EQ(run1("Einsum", {val("a", {0}, F{}), val("b", {2}, F{1, 2})}, {string_attr("equation", "i,j->ij")})
                ->out("y")
                .shape,
            (Shape{0, 2}));
}

TEST(Einsum, Errors) {
  const F a = {1, 2, 3, 4};
  expect_error(error_of("Einsum", {val("a", {2, 2}, a)}, {string_attr("equation", "...ij->...ji")}),
               {"node 'n' (Einsum)", "'...ij->...ji' is not supported", "ellipsis"});
  expect_error(error_of("Einsum", {val("a", {2, 2}, a), val("b", {3}, F{1, 2, 3})},
                        {string_attr("equation", "ij,j->i")}),
               {"node 'n' (Einsum)", "has size 3, elsewhere 2"});
  expect_error(error_of("Einsum", {val("a", {2, 2}, a)}, {string_attr("equation", "ijk->i")}),
               {"node 'n' (Einsum)", "rank 2"});
  expect_error(error_of("Einsum", {val("a", {2, 2}, a)}, {string_attr("equation", "ij,jk->ik")}),
               {"node 'n' (Einsum)", "2 operands"});
  expect_error(error_of("Einsum", {val("a", {2, 2}, a)}, {string_attr("equation", "ij->k")}),
               {"node 'n' (Einsum)", "appears in no input"});
  expect_error(error_of("Einsum", {val("a", {2, 2}, a)}),
               {"node 'n' (Einsum)", "missing required attribute"});
  expect_error(error_of("Einsum", {val("a", {2}, F{1, 2}), val("b", {2}, I64{1, 2})},
                        {string_attr("equation", "i,i")}),
               {"node 'n' (Einsum)", "differs"});
  // int64 overflow of the output element count: [2^40] x [2^40].
  const int64_t big = int64_t{1} << 40;
  expect_error(error_of("Einsum", {huge("a", DataType::kFloat, {big}), huge("b", DataType::kFloat, {big})},
                        {string_attr("equation", "i,j->ij")}),
               {"node 'n' (Einsum)", "overflows int64"});
}

// ---- DynamicQuantizeLinear --------------------------------------------------------------------

struct Dql {
  std::vector<uint8_t> y;
  float scale;
  uint8_t zp;
};
Dql dql(const F& x, std::vector<int64_t> dims) {
  auto r = run_node("DynamicQuantizeLinear", {val("x", std::move(dims), x)}, {"y", "s", "z"});
  EXPECT_EQ(r->out("y").dtype, graph::DType::kU8);
  EXPECT_EQ(r->out("s").shape, (Shape{}));
  EXPECT_EQ(r->out("z").dtype, graph::DType::kU8);
  return {r->get<uint8_t>("y"), r->get<float>("s")[0], r->get<uint8_t>("z")[0]};
}

TEST(DynamicQuantizeLinear, SpecExamples) {
  Dql a = dql({0, 2, -3, -2.5f, 1.34f, 0.5f}, {6});
  EXPECT_FLOAT_EQ(a.scale, 5.0f / 255.0f);
  EXPECT_EQ(a.zp, 153);
  EXPECT_EQ(a.y, (U8{153, 255, 0, 26, 221, 179}));
  Dql b = dql({-1, -2.1f, -1.3f, -2.5f, -3.34f, -4.0f}, {6});
  EXPECT_FLOAT_EQ(b.scale, 4.0f / 255.0f);
  EXPECT_EQ(b.zp, 255);
  EXPECT_EQ(b.y, (U8{191, 121, 172, 96, 42, 0}));
  Dql c = dql({1, 2.1f, 1.3f, 2.5f, 3.34f, 4.0f, 1.5f, 2.6f, 3.9f, 4.0f, 3.0f, 2.345f}, {3, 4});
  EXPECT_EQ(c.zp, 0);
  EXPECT_EQ(c.y, (U8{64, 134, 83, 159, 213, 255, 96, 166, 249, 255, 191, 149}));  // as ORT 1.23
}

TEST(DynamicQuantizeLinear, HalfEvenZerosEmptyAndThreads) {
  // scale 1: x / scale lands on halves; round half to even (2.5 -> 2, 3.5 -> 4, -0.5 -> -0).
  Dql h = dql({-1, 254, 2.5f, 3.5f, -0.5f, 0.5f}, {6});
  EXPECT_EQ(h.scale, 1.0f);
  EXPECT_EQ(h.zp, 1);
  EXPECT_EQ(h.y, (U8{0, 255, 3, 5, 1, 1}));
  // The zero point itself rounds half to even: 0 - (-0.5) / 1 = 0.5 -> 0.
  Dql z = dql({-0.5f, 254.5f}, {2});
  EXPECT_EQ(z.scale, 1.0f);
  EXPECT_EQ(z.zp, 0);
  EXPECT_EQ(z.y, (U8{0, 254}));
  // All zeros and no elements: ORT's scale 1, zero point 0.
  Dql zeros = dql({0, 0, 0}, {3});
  EXPECT_EQ(zeros.scale, 1.0f);
  EXPECT_EQ(zeros.zp, 0);
  EXPECT_EQ(zeros.y, (U8{0, 0, 0}));
  Dql empty = dql({}, {0, 4});
  EXPECT_EQ(empty.scale, 1.0f);
  EXPECT_EQ(empty.zp, 0);
  EXPECT_TRUE(empty.y.empty());
  // A large tensor over 3 threads equals the formula element by element.
  F x = random_floats(50000, 5);
  auto r = run_node("DynamicQuantizeLinear", {val("x", {50000}, x)}, {"y", "s", "z"}, {}, 3);
  float lo = 0, hi = 0;
  for (float v : x) lo = std::min(lo, v), hi = std::max(hi, v);
  const float scale = (hi - lo) / 255.0f;
  const float zp = std::nearbyint(std::clamp(0.0f - lo / scale, 0.0f, 255.0f));
  EXPECT_EQ(r->get<float>("s")[0], scale);
  EXPECT_EQ(r->get<uint8_t>("z")[0], static_cast<uint8_t>(zp));
  const auto y = r->get<uint8_t>("y");
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(y[i], static_cast<uint8_t>(std::clamp(std::nearbyint(x[i] / scale) + zp, 0.0f, 255.0f))) << i;
}

TEST(DynamicQuantizeLinear, Errors) {
  expect_error(error_of("DynamicQuantizeLinear", {val("x", {2}, I64{1, 2})}, {}, {"y", "s", "z"}),
               {"node 'n' (DynamicQuantizeLinear)", "int64"});
  expect_error(
      error_of("DynamicQuantizeLinear", {val("x", {2}, F{1, 2})}, {int_attr("axis", 0)}, {"y", "s", "z"}),
      {"node 'n' (DynamicQuantizeLinear)", "attribute 'axis' is not supported"});
}

// ---- MatMulInteger ----------------------------------------------------------------------------

// Reference: y[b][m][n] = sum_k (a[m][k] - za[m]) * (b[k][n] - zb[n]) for 2-D operands.
template <typename TA, typename TB>
I32 mmi_ref(const std::vector<TA>& a, const std::vector<TB>& b, int64_t M, int64_t K, int64_t N,
            const std::vector<int32_t>& za, const std::vector<int32_t>& zb) {
  I32 y(static_cast<size_t>(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      int64_t acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += (int64_t(a[m * K + k]) - za[za.size() == 1 ? 0 : m]) *
               (int64_t(b[k * N + n]) - zb[zb.size() == 1 ? 0 : n]);
      y[static_cast<size_t>(m * N + n)] = static_cast<int32_t>(acc);
    }
  return y;
}

TEST(MatMulInteger, SpecExample) {
  auto r = run1("MatMulInteger",
                {val("a", {4, 3}, U8{11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0}),
                 init("b", {3, 2}, U8{1, 4, 2, 5, 3, 6}), val("za", {}, U8{12}), init("zb", {}, U8{0})});
  EXPECT_EQ(r->out("y").dtype, graph::DType::kI32);
  EXPECT_EQ(r->out("y").shape, (Shape{4, 2}));
  EXPECT_EQ(r->get<int32_t>("y"), (I32{-38, -83, -44, -98, -50, -113, -56, -128}));
}

TEST(MatMulInteger, SignedPerColumnPerRowAndQuantizeDynamicLayouts) {
  const int64_t M = 3, K = 37, N = 70;  // N above one column chunk? no: chunking tested below
  U8 a(static_cast<size_t>(M * K));
  I8 b(static_cast<size_t>(K * N));
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>((i * 37 + 11) % 256);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = static_cast<int8_t>(static_cast<int>((i * 53 + 7) % 256) - 128);
  // quantize_dynamic QInt8 per tensor: uint8 A with its zero point, int8 B with zero point 0.
  auto t = run1("MatMulInteger",
                {val("a", {M, K}, a), init("b", {K, N}, b), val("za", {}, U8{131}), init("zb", {}, I8{0})});
  EXPECT_EQ(t->get<int32_t>("y"), mmi_ref(a, b, M, K, N, {131}, {0}));
  // Per column int8 zero points ([N]) and per-row A zero points ([M]).
  I8 zb(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) zb[static_cast<size_t>(n)] = static_cast<int8_t>(n % 7 - 3);
  auto c = run1("MatMulInteger", {val("a", {M, K}, a), init("b", {K, N}, b), val("za", {M}, U8{1, 200, 255}),
                                  init("zb", {N}, zb)});
  std::vector<int32_t> zbi(zb.begin(), zb.end());
  EXPECT_EQ(c->get<int32_t>("y"), mmi_ref(a, b, M, K, N, {1, 200, 255}, zbi));
  // Per column as [1, N] (B's shape with K replaced by 1); zero points absent on A.
  auto c2 =
      run1("MatMulInteger", {val("a", {M, K}, a), init("b", {K, N}, b), Value{}, init("zb", {1, N}, zb)});
  EXPECT_EQ(c2->get<int32_t>("y"), mmi_ref(a, b, M, K, N, {0}, zbi));
  // QUInt8 weights (uint8 B, zero point 128) and int8 A.
  U8 bu(b.size());
  for (size_t i = 0; i < b.size(); ++i) bu[i] = static_cast<uint8_t>(b[i] + 128);
  I8 as(a.size());
  for (size_t i = 0; i < a.size(); ++i) as[i] = static_cast<int8_t>(a[i] - 128);
  auto u = run1("MatMulInteger", {val("a", {M, K}, as), init("b", {K, N}, bu), val("za", {}, I8{-3}),
                                  init("zb", {}, U8{128})});
  EXPECT_EQ(u->get<int32_t>("y"), mmi_ref(as, bu, M, K, N, {-3}, {128}));
}

TEST(MatMulInteger, BatchBroadcastVectorsEmptyThreads) {
  // A [2,1,2,3] x B [3,3,2] -> [2,3,2,2]; every (batch) pair against the 2-D reference.
  const int64_t M = 2, K = 3, N = 2;
  U8 a(2 * M * K), b(3 * K * N);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(i * 7 % 50);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i * 11 % 60);
  auto r = run1("MatMulInteger", {val("a", {2, 1, M, K}, a), val("b", {3, K, N}, b), val("za", {}, U8{3}),
                                  val("zb", {}, U8{5})});
  EXPECT_EQ(r->out("y").shape, (Shape{2, 3, M, N}));
  const I32 y = r->get<int32_t>("y");
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      const U8 ai(a.begin() + i * M * K, a.begin() + (i + 1) * M * K);
      const U8 bj(b.begin() + j * K * N, b.begin() + (j + 1) * K * N);
      const I32 want = mmi_ref(ai, bj, M, K, N, {3}, {5});
      EXPECT_EQ(I32(y.begin() + (i * 3 + j) * M * N, y.begin() + (i * 3 + j + 1) * M * N), want)
          << i << "," << j;
    }
  // Per-row A zero points of A's shape ([2,1,M,1]) under the same broadcast.
  auto pr = run1("MatMulInteger", {val("a", {2, 1, M, K}, a), val("b", {3, K, N}, b),
                                   val("za", {2, 1, M, 1}, U8{1, 2, 3, 4})});
  const I32 yp = pr->get<int32_t>("y");
  const U8 a1(a.begin() + M * K, a.end());
  const U8 b2(b.begin() + 2 * K * N, b.end());
  EXPECT_EQ(I32(yp.begin() + 5 * M * N, yp.end()), mmi_ref(a1, b2, M, K, N, {3, 4}, {0}));
  // 1-D A and 1-D B drop their dim.
  auto v = run1("MatMulInteger", {val("a", {3}, U8{1, 2, 3}), val("b", {3, 2}, U8{1, 0, 0, 1, 1, 1})});
  EXPECT_EQ(v->out("y").shape, (Shape{2}));
  EXPECT_EQ(v->get<int32_t>("y"), (I32{4, 5}));
  auto d = run1("MatMulInteger", {val("a", {3}, U8{1, 2, 3}), val("b", {3}, U8{1, 1, 2})});
  EXPECT_EQ(d->out("y").shape, (Shape{}));
  EXPECT_EQ(d->get<int32_t>("y"), (I32{9}));
  // K = 0: zeros; M = 0: empty.
  EXPECT_EQ(run1("MatMulInteger", {val("a", {2, 0}, U8{}), val("b", {0, 3}, U8{})})->get<int32_t>("y"),
            (I32(6, 0)));
  EXPECT_EQ(run1("MatMulInteger", {val("a", {0, 4}, U8{}), val("b", {4, 3}, U8(12, 1))})->out("y").shape,
            (Shape{0, 3}));
  // A decode-sized product over several column chunks and 3 threads.
  const int64_t K2 = 300, N2 = 1100;
  U8 a2(static_cast<size_t>(K2));
  I8 w(static_cast<size_t>(K2 * N2));
  for (size_t i = 0; i < a2.size(); ++i) a2[i] = static_cast<uint8_t>((i * 97) % 256);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int8_t>(static_cast<int>((i * 31) % 255) - 127);
  auto big =
      run_node("MatMulInteger", {val("a", {1, 1, K2}, a2), init("b", {K2, N2}, w), val("za", {}, U8{77})},
               {"y"}, {}, 3);
  EXPECT_EQ(big->get<int32_t>("y"), mmi_ref(a2, w, 1, K2, N2, {77}, {0}));
}

TEST(MatMulInteger, Errors) {
  const U8 a = {1, 2, 3, 4};
  expect_error(error_of("MatMulInteger", {val("a", {2, 2}, a), val("b", {3, 2}, U8{1, 2, 3, 4, 5, 6})}),
               {"node 'n' (MatMulInteger)", "disagree on K"});
  expect_error(error_of("MatMulInteger", {val("a", {2, 2}, a), val("b", {2, 2}, a), val("za", {}, I8{1})}),
               {"node 'n' (MatMulInteger)", "a_zero_point dtype int8 differs"});
  expect_error(error_of("MatMulInteger",
                        {val("a", {2, 2}, a), val("b", {2, 2}, a), Value{}, val("zb", {3}, U8{1, 2, 3})}),
               {"node 'n' (MatMulInteger)", "b_zero_point of shape [3]", "per column"});
  expect_error(error_of("MatMulInteger", {val("a", {2, 2}, F{1, 2, 3, 4}), val("b", {2, 2}, a)}),
               {"node 'n' (MatMulInteger)", "dtype float, expected uint8/int8"});
  expect_error(error_of("MatMulInteger", {val("a", {2, 2, 2}, U8(8)), val("b", {3, 2, 2}, U8(12))}),
               {"node 'n' (MatMulInteger)", "cannot be broadcast"});
  // int64 overflow of the output element count: [2^31,1,1,1] x [1,2^31,1,2^31] -> 2^93 elements.
  const int64_t g = int64_t{1} << 31;
  expect_error(error_of("MatMulInteger", {huge("a", DataType::kUint8, {g, 1, 1, 1}),
                                          huge("b", DataType::kUint8, {1, g, 1, g})}),
               {"node 'n' (MatMulInteger)", "overflows int64"});
}

// ---- quantize_dynamic's int8 MatMul, fused at load (graph/fuse_dynamic_quantize.h) --------------

struct Int8Case {
  int64_t M, K, N;
  bool signed_w, per_column, fuse;
  std::optional<int> accuracy_level = std::nullopt;  // --accuracy-level
};

// y = Mul(Cast(MatMulInteger(DQL(x).y, W, DQL(x).zp, W_zp)), Mul(DQL(x).scale, W_scale)), as
// quantize_dynamic writes it (W_scale, W_zp initializers; W constant unless !fuse).
std::unique_ptr<graph::Session> int8_matmul_model(const Int8Case& c, const F& ws,
                                                  const std::vector<uint8_t>& w,
                                                  const std::vector<uint8_t>& wzp, int threads) {
  onnx::ModelWriter m;
  m.add_opset("", 18);
  const DataType wdt = c.signed_w ? DataType::kInt8 : DataType::kUint8;
  m.add_input("x", DataType::kFloat, {onnx::dim_value(1), onnx::dim_value(c.M), onnx::dim_value(c.K)});
  if (c.fuse) {
    m.add_initializer("W", wdt, {c.K, c.N}, std::vector<uint8_t>(w));
  } else {
    m.add_input("W", wdt, {onnx::dim_value(c.K), onnx::dim_value(c.N)});
  }
  const std::vector<int64_t> sd = c.per_column ? std::vector<int64_t>{c.N} : std::vector<int64_t>{};
  m.add_initializer("Ws", DataType::kFloat, sd, bytes_of(ws));
  m.add_initializer("Wz", wdt, sd, std::vector<uint8_t>(wzp));
  m.add_node("DynamicQuantizeLinear", "", "dql", {"x"}, {"xq", "xs", "xz"}, {});
  m.add_node("MatMulInteger", "", "mmi", {"xq", "W", "xz", "Wz"}, {"yi"}, {});
  m.add_node("Cast", "", "cast", {"yi"}, {"yf"}, {int_attr("to", 1)});
  m.add_node("Mul", "", "smul", {"xs", "Ws"}, {"sc"}, {});
  m.add_node("Mul", "", "mul", {"yf", "sc"}, {"y"}, {});
  m.add_output("y", DataType::kUndefined, {});
  graph::SessionOptions opt;
  opt.threads = threads;
  opt.profile = true;
  opt.accuracy_level = c.accuracy_level;
  return load_written(m, opt);
}

TEST(DynamicQuantizeMatMulFusion, PackedInt8PathAgreesWithTheExactProduct) {
  for (const Int8Case& c : {Int8Case{1, 64, 48, true, false, true}, Int8Case{5, 100, 33, true, true, true},
                            Int8Case{3, 96, 40, false, false, true}, Int8Case{2, 70, 24, false, true, true},
                            Int8Case{3, 64, 16, true, true, false}, Int8Case{4, 96, 40, true, true, true, 0},
                            Int8Case{2, 70, 24, false, false, true, 0}}) {
    SCOPED_TRACE(::testing::Message()
                 << "level " << c.accuracy_level.value_or(-1) << " M " << c.M << " K " << c.K << " N " << c.N
                 << " signed " << c.signed_w << " per_column " << c.per_column << " fuse " << c.fuse);
    const F x = random_floats(static_cast<size_t>(c.M * c.K), 21);
    const size_t ns = c.per_column ? static_cast<size_t>(c.N) : 1;
    F ws(ns);
    std::vector<uint8_t> wzp(ns);
    for (size_t i = 0; i < ns; ++i) {
      ws[i] = 0.01f + 0.002f * static_cast<float>(i % 5);
      wzp[i] = c.signed_w ? static_cast<uint8_t>(static_cast<int8_t>(static_cast<int>(i % 3) - 1))
                          : static_cast<uint8_t>(120 + i % 16);
    }
    std::vector<uint8_t> w(static_cast<size_t>(c.K * c.N));
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<uint8_t>((i * 73 + 19) % 256);
    auto wv = [&](int64_t k, int64_t n) {
      const size_t i = static_cast<size_t>(k * c.N + n), z = c.per_column ? static_cast<size_t>(n) : 0;
      const int q = c.signed_w ? static_cast<int8_t>(w[i]) : w[i];
      const int zp = c.signed_w ? static_cast<int8_t>(wzp[z]) : wzp[z];
      return static_cast<double>(q - zp) * ws[z];
    };
    // ORT's result (per-tensor uint8 activations) and the exact product x . dequant(W).
    float lo = 0, hi = 0;
    for (float v : x) lo = std::min(lo, v), hi = std::max(hi, v);
    const float xs = (hi - lo) / 255.0f;
    const float xz = std::nearbyint(std::clamp(-lo / xs, 0.0f, 255.0f));
    double err_ort = 0, err_nbits = 0, ref_sq = 0;
    auto s = int8_matmul_model(c, ws, w, wzp, 2);
    graph::Shape xs_shape{1, c.M, c.K};
    s->bind_input("x", {graph::DType::kF32, xs_shape, const_cast<float*>(x.data())});
    if (!c.fuse)
      s->bind_input("W", {c.signed_w ? graph::DType::kI8 : graph::DType::kU8, Shape{c.K, c.N}, w.data()});
    s->run();
    const graph::Tensor& y = s->output("y");
    ASSERT_EQ(y.shape, (Shape{1, c.M, c.N}));
    for (int64_t m = 0; m < c.M; ++m)
      for (int64_t n = 0; n < c.N; ++n) {
        double exact = 0, ort = 0;
        for (int64_t k = 0; k < c.K; ++k) {
          const float v = x[static_cast<size_t>(m * c.K + k)];
          const double q = std::clamp(std::nearbyint(v / xs) + xz, 0.0f, 255.0f) - xz;
          exact += double(v) * wv(k, n);
          ort += q * xs * wv(k, n);
        }
        const double got = y.as<float>()[m * c.N + n];
        ref_sq += exact * exact;
        err_ort += (ort - exact) * (ort - exact);
        err_nbits += (got - exact) * (got - exact);
        if (!c.fuse) {
          EXPECT_NEAR(got, ort, 1e-5 * std::max(1.0, std::fabs(ort)));  // the general path is ORT's
        }
      }
    // Fused at the default accuracy level 4: int8 activations per (row, block of 32), symmetric,
    // whose rounding is of the order of ORT's one uint8 scale per tensor (within 3x its rms
    // error); at level 0 (fp32 activations) the product is exact but for fp32 sums.
    if (c.fuse && c.accuracy_level == 0) {
      EXPECT_LT(std::sqrt(err_nbits / ref_sq), 1e-5);
    } else if (c.fuse) {
      EXPECT_LE(std::sqrt(err_nbits), 3 * std::sqrt(err_ort))
          << "rms error " << std::sqrt(err_nbits / ref_sq);
    }
    EXPECT_LT(std::sqrt(err_nbits / ref_sq), 1e-2);
    // Fused: one packed 8-bit matmul and nothing else; unfused: the five nodes.
    EXPECT_EQ(s->matmul_nbits_info().size(), c.fuse ? 1u : 0u);
    EXPECT_EQ(s->profile().size(), c.fuse ? 1u : 5u);
    if (c.fuse) {
      EXPECT_EQ(s->matmul_nbits_info()[0].bits, 8);
    }
  }
}

}  // namespace
}  // namespace nbits::testing
