// Prints an FNV-1a hash of every kernels/vector_ops.h result over deterministic inputs (lengths
// 0..70 and a few long ones, every tail), one line per helper. tools/arm64/test.sh builds it for
// x86 (AVX2 helpers) and for aarch64 (NEON helpers, run under QEMU) and requires equal lines: the
// NEON port computes the AVX2 path's bits.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "base/fp16.h"
#include "kernels/vector_ops.h"

using namespace nbits;
using namespace nbits::kernels;

namespace {

std::mt19937 rng(2024);
float rnd(float scale) {
  return static_cast<float>(static_cast<int>(rng() % 20001) - 10000) / 10000.0f * scale;
}
std::vector<float> vec(int64_t n, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = rnd(scale);
  return v;
}

struct Hash {
  uint64_t h = 1469598103934665603ull;
  void add(const void* p, size_t n) {
    for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const uint8_t*>(p)[i]) * 1099511628211ull;
  }
  void add(const std::vector<float>& v) { add(v.data(), v.size() * sizeof(float)); }
  void add(float f) { add(&f, sizeof f); }
  void add(int64_t i) { add(&i, sizeof i); }
};

}  // namespace

int main() {
  std::vector<int64_t> lens;
  for (int64_t n = 1; n <= 70; ++n) lens.push_back(n);
  for (int64_t n : {127, 128, 129, 200, 1000, 4099}) lens.push_back(n);
  Hash dot, axpy, rms, softmax, argmax, mx, expv, sig, silu, silu1, bin, bins, sumsq;
  for (int64_t n : lens) {
    const auto a = vec(n, 3.0f), b = vec(n, 2.0f), w = vec(n, 1.5f);
    dot.add(vec_dot(a.data(), b.data(), n));
    auto y = b;
    vec_axpy(0.37f, a.data(), y.data(), n);
    axpy.add(y);
    std::vector<float> r(static_cast<size_t>(n));
    vec_rms_norm(a.data(), w.data(), n, 1e-5f, r.data());
    rms.add(r);
    auto s = vec(n, 20.0f);
    vec_softmax(s.data(), n);
    softmax.add(s);
    argmax.add(vec_argmax(a.data(), n));
    mx.add(vec_max(a.data(), n));
    auto e = vec(n, 90.0f);
    vec_exp(e.data(), e.data(), n);
    expv.add(e);
    auto g = vec(n, 30.0f);
    vec_sigmoid(g.data(), g.data(), n);
    sig.add(g);
    std::vector<float> o(static_cast<size_t>(n));
    vec_silu_mul(a.data(), b.data(), o.data(), n);
    silu.add(o);
    vec_silu_mul(a.data(), nullptr, o.data(), n);
    silu1.add(o);
    for (VecOp op : {VecOp::kAdd, VecOp::kSub, VecOp::kMul, VecOp::kDiv}) {
      vec_binary(op, a.data(), w.data(), o.data(), n);
      bin.add(o);
      vec_binary_scalar(op, a.data(), 1.25f, false, o.data(), n);
      bins.add(o);
      vec_binary_scalar(op, a.data(), 1.25f, true, o.data(), n);
      bins.add(o);
    }
  }
  for (int64_t rows : {1, 3, 8, 9, 17})
    for (int64_t n : {1, 7, 8, 15, 16, 33, 64, 100}) {
      const auto x = vec(rows * n, 2.0f);
      std::vector<float> out(static_cast<size_t>(rows));
      vec_sum_squares_rows(x.data(), rows, n, out.data());
      sumsq.add(out);
    }
  Hash dr, ar, dr16, ar16;
  for (int64_t nx : {1, 2, 3, 5})
    for (int64_t rows : {1, 2, 4, 5, 8, 9, 13})
      for (int64_t n : {1, 5, 8, 16, 17, 40, 64, 65, 130}) {
        const auto x = vec(nx * n, 1.0f), M = vec(rows * n, 1.0f), p = vec(nx * rows, 1.0f);
        std::vector<uint16_t> M16(M.size());
        for (size_t i = 0; i < M.size(); ++i) M16[i] = float_to_fp16(M[i]);
        std::vector<float> y(static_cast<size_t>(nx * rows));
        vec_dot_rows(x.data(), nx, n, M.data(), rows, n, 0.125f, y.data(), rows);
        dr.add(y);
        vec_dot_rows_f16(x.data(), nx, n, M16.data(), rows, n, 0.125f, y.data(), rows);
        dr16.add(y);
        auto acc = vec(nx * n, 1.0f), acc16 = acc;
        vec_accumulate_rows(p.data(), nx, rows, M.data(), rows, n, acc.data(), n);
        ar.add(acc);
        vec_accumulate_rows_f16(p.data(), nx, rows, M16.data(), rows, n, acc16.data(), n);
        ar16.add(acc16);
      }
  const struct {
    const char* name;
    const Hash& h;
  } all[] = {{"dot", dot},
             {"axpy", axpy},
             {"rms_norm", rms},
             {"softmax", softmax},
             {"argmax", argmax},
             {"max", mx},
             {"exp", expv},
             {"sigmoid", sig},
             {"silu_mul", silu},
             {"silu", silu1},
             {"binary", bin},
             {"binary_scalar", bins},
             {"sum_squares", sumsq},
             {"dot_rows", dr},
             {"dot_rows_f16", dr16},
             {"accumulate_rows", ar},
             {"accumulate_rows_f16", ar16}};
  std::fprintf(stderr, "vector_ops isa: %s\n", vector_ops_isa());
  for (const auto& e : all) std::printf("%-20s %016llx\n", e.name, static_cast<unsigned long long>(e.h.h));
  return 0;
}
