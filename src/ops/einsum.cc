// Einsum (opset 12) over explicit labels: "i,j->ij" (torch.outer / the rotary frequencies of older
// exports), "bi,j->bij", "bhqd,bhkd->bhqk" style batched products, reductions ("ij->i"),
// transposes ("ij->ji"), diagonals ("ii->i") and the implicit form ("ij,jk" = "ij,jk->ik": the
// labels seen once, alphabetical). Labels are letters; every use of a label must have the same
// size (no broadcasting of labelled dims). Ellipsis ('...') is refused by name. One loop walks
// every label's index (output labels outer, summed labels inner), so the cost is the product of
// all label sizes: fine for the small products exporters emit, not a matmul kernel.
#include <cstring>
#include <string>

#include "ops/op_util.h"
#include "ops/ops.h"

namespace nbits::ops {
namespace {

using graph::OpArgs;
using graph::RunContext;

constexpr int kMaxLabels = 16;

struct Equation {
  std::vector<std::vector<int>> inputs;  // label ids per operand dim
  std::vector<int> output;               // label ids of the output dims
  int labels = 0;                        // distinct labels; ids [0, labels): output ones first
};

// Parses `eq` for `n` operands; throws naming the equation when it is not supported.
Equation parse(const std::string& eq, size_t n, const std::string& where) {
  auto bad = [&](const char* why) { fail(where, ": Einsum equation '", eq, "' is not supported: ", why); };
  if (eq.find("...") != std::string::npos || eq.find('.') != std::string::npos) bad("ellipsis ('...')");
  std::string lhs = eq, rhs;
  const size_t arrow = eq.find("->");
  const bool explicit_out = arrow != std::string::npos;
  if (explicit_out) {
    lhs = eq.substr(0, arrow);
    rhs = eq.substr(arrow + 2);
  }
  std::vector<std::string> terms(1);
  for (char c : lhs) {
    if (c == ' ') continue;
    if (c == ',') {
      terms.emplace_back();
      continue;
    }
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) bad("labels must be letters");
    terms.back() += c;
  }
  if (terms.size() != n)
    fail(where, ": Einsum equation '", eq, "' has ", terms.size(), " operands, the node ", n);
  int count[128] = {};
  for (const std::string& t : terms)
    for (char c : t) ++count[static_cast<int>(c)];
  std::string out;
  if (explicit_out) {
    for (char c : rhs) {
      if (c == ' ') continue;
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) bad("labels must be letters");
      if (count[static_cast<int>(c)] == 0) bad("an output label appears in no input");
      if (out.find(c) != std::string::npos) bad("an output label is repeated");
      out += c;
    }
  } else {
    for (int c = 0; c < 128; ++c)
      if (count[c] == 1) out += static_cast<char>(c);  // ASCII order: upper case first, as numpy
  }
  int id[128];
  std::fill(std::begin(id), std::end(id), -1);
  Equation e;
  for (char c : out) id[static_cast<int>(c)] = e.labels++;
  for (const std::string& t : terms)
    for (char c : t)
      if (id[static_cast<int>(c)] < 0) id[static_cast<int>(c)] = e.labels++;
  if (e.labels > kMaxLabels) bad("more than 16 labels");
  if (out.size() > static_cast<size_t>(Shape::kMaxRank)) bad("output rank above 8");
  for (const std::string& t : terms) {
    e.inputs.emplace_back();
    for (char c : t) e.inputs.back().push_back(id[static_cast<int>(c)]);
  }
  for (char c : out) e.output.push_back(id[static_cast<int>(c)]);
  return e;
}

class EinsumOp final : public Op {
 public:
  EinsumOp(std::string where, std::string eq, Equation e, DType t)
      : where_(std::move(where)), eq_(std::move(eq)), e_(std::move(e)), type_(t) {}

  void infer(const OpArgs& a) const override {
    int64_t size[kMaxLabels];
    sizes(a, size);
    Shape y;
    int64_t total = 1;
    for (int l : e_.output) {
      y.push_back(size[l]);
      NBITS_CHECK(!__builtin_mul_overflow(total, size[l], &total), where_, ": Einsum '", eq_,
                  "' output element count overflows int64");
    }
    a.out[0]->shape = y;
  }

  void run(const OpArgs& a, RunContext&) const override {
    int64_t size[kMaxLabels];
    sizes(a, size);
    dispatch_type(type_, [&](auto z) { compute<decltype(z)>(a, size); });
  }

 private:
  void sizes(const OpArgs& a, int64_t* size) const {
    for (int l = 0; l < e_.labels; ++l) size[l] = -1;
    for (size_t i = 0; i < e_.inputs.size(); ++i) {
      const Shape& s = a.in[i]->shape;
      NBITS_CHECK(s.rank == static_cast<int>(e_.inputs[i].size()), where_, ": Einsum '", eq_, "' operand ", i,
                  " has rank ", s.rank, " (shape ", s.str(), "), the equation ", e_.inputs[i].size());
      for (int d = 0; d < s.rank; ++d) {
        int64_t& z = size[e_.inputs[i][static_cast<size_t>(d)]];
        NBITS_CHECK(z < 0 || z == s[d], where_, ": Einsum '", eq_, "' label of operand ", i, " dim ", d,
                    " has size ", s[d], ", elsewhere ", z);
        z = s[d];
      }
    }
  }
  template <typename T>
  void compute(const OpArgs& a, const int64_t* size) const {
    const int L = e_.labels, O = static_cast<int>(e_.output.size());
    const size_t n_in = e_.inputs.size();
    // stride[i][l]: element step of operand i when label l advances (repeated labels add up).
    int64_t stride[8][kMaxLabels] = {};
    NBITS_CHECK(n_in <= 8, where_, ": Einsum with more than 8 operands is not supported");
    for (size_t i = 0; i < n_in; ++i) {
      int64_t st = 1;
      const Shape& s = a.in[i]->shape;
      for (int d = s.rank - 1; d >= 0; --d) {
        stride[i][e_.inputs[i][static_cast<size_t>(d)]] += st;
        st *= s[d];
      }
    }
    T* y = a.out[0]->as<T>();
    const int64_t ny = a.out[0]->numel();
    if (ny == 0) return;
    int64_t inner = 1;  // summed labels
    for (int l = O; l < L; ++l) inner *= size[l];
    const T* x[8];
    for (size_t i = 0; i < n_in; ++i) x[i] = a.in[i]->as<const T>();
    int64_t idx[kMaxLabels] = {};
    int64_t off[8] = {};
    for (int64_t o = 0; o < ny; ++o) {
      T acc = T(0);
      for (int64_t r = 0; r < inner; ++r) {
        T p = T(1);
        for (size_t i = 0; i < n_in; ++i) p = static_cast<T>(p * x[i][off[i]]);
        acc = static_cast<T>(acc + p);
        // advance the summed labels (innermost = last label)
        for (int l = L - 1; l >= O; --l) {
          for (size_t i = 0; i < n_in; ++i) off[i] += stride[i][l];
          if (++idx[l] < size[l]) break;
          for (size_t i = 0; i < n_in; ++i) off[i] -= stride[i][l] * idx[l];
          idx[l] = 0;
        }
      }
      y[o] = acc;
      for (int l = O - 1; l >= 0; --l) {
        for (size_t i = 0; i < n_in; ++i) off[i] += stride[i][l];
        if (++idx[l] < size[l]) break;
        for (size_t i = 0; i < n_in; ++i) off[i] -= stride[i][l] * idx[l];
        idx[l] = 0;
      }
    }
  }
  std::string where_, eq_;
  Equation e_;
  DType type_;
};

}  // namespace

std::unique_ptr<Op> make_einsum(OpBuild& b) {
  allow_attributes(b, {"equation"});
  const onnx::Attribute* eq = b.node.attr("equation");
  b.check(eq != nullptr, "missing required attribute 'equation'");
  const std::string equation = b.node.attr_string("equation", "");
  size_t n = b.node.inputs.size();
  b.check(n >= 1, "Einsum needs at least one input");
  const DType t = b.type(0);
  b.require_type(0, {DType::kF32, DType::kI64, DType::kI32}, "Inputs");
  for (size_t i = 1; i < n; ++i)
    b.check(b.type(i) == t, "input ", i, " dtype ", graph::dtype_name(b.type(i)), " differs from input 0's ",
            graph::dtype_name(t));
  Equation e = parse(equation, n, b.where());
  b.set_outputs(t);
  return std::make_unique<EinsumOp>(b.where(), equation, std::move(e), t);
}

}  // namespace nbits::ops
