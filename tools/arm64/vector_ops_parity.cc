// Prints an FNV-1a hash of every kernels/vector_ops.h result over deterministic inputs (lengths
// 0..70 and a few long ones, every tail), one line per helper, and of the attention tile and decode
// kernels (kernels/attention.h: the AVX2 ones on x86, NEON on arm64) over fp32 / fp16 / int8 caches.
// tools/arm64/test.sh builds it for x86 and for aarch64 (run under QEMU) and requires equal lines:
// the NEON ports compute the AVX2 paths' bits.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "base/fp16.h"
#include "kernels/attention.h"
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
      // Attention: decode (G heads, one position) and causal tiles of P positions, every cache type.
#if defined(__aarch64__)
  const char* attn_isa = "neon";
#else
  const char* attn_isa = "avx2";
#endif
  if (!attention_select_isa(attn_isa)) {
    std::fprintf(stderr, "no %s attention kernels here\n", attn_isa);
    return 1;
  }
  Hash att_dec, att_tile;
  for (int64_t H : {64, 80, 17})
    for (int64_t n : {1, 7, 64, 65, 300}) {
      const int64_t G = 7, P = std::min<int64_t>(n, 5);
      const auto K = vec(n * H, 1.0f), V = vec(n * H, 1.0f), q = vec(G * P * H, 1.0f);
      std::vector<uint16_t> K16(K.size()), V16(V.size());
      for (size_t i = 0; i < K.size(); ++i) K16[i] = float_to_fp16(K[i]), V16[i] = float_to_fp16(V[i]);
      const int64_t rb = kv_q8_row_bytes(H);
      std::vector<int8_t> K8(static_cast<size_t>(n * rb)), V8(K8.size());
      for (int64_t j = 0; j < n; ++j) {
        quantize_kv_q8_row(K.data() + j * H, H, K8.data() + j * rb);
        quantize_kv_q8_row(V.data() + j * H, H, V8.data() + j * rb);
      }
      AttentionParams ap;
      ap.head_size = H;
      ap.scale = 0.125f;
      std::vector<float> o(static_cast<size_t>(G * P * H));
      attend_decode(q.data(), H, G, K.data(), V.data(), n, ap, o.data(), H);
      att_dec.add(o);
      attend_decode(q.data(), H, G, K16.data(), V16.data(), n, ap, o.data(), H);
      att_dec.add(o);
      attend_decode(q.data(), H, G, K8.data(), V8.data(), n, ap, o.data(), H);
      att_dec.add(o);
      // Rows (position p, head g) see keys [0, n - P + p + 1).
      std::vector<const float*> qp;
      std::vector<float*> op;
      std::vector<int64_t> lo, hi;
      for (int64_t p = 0; p < P; ++p)
        for (int64_t g = 0; g < G; ++g) {
          qp.push_back(q.data() + (p * G + g) * H);
          op.push_back(o.data() + (p * G + g) * H);
          lo.push_back(0);
          hi.push_back(n - P + p + 1);
        }
      const AttentionRows rows{qp.data(), op.data(), lo.data(), hi.data(), G * P};
      attend_rows(rows, K.data(), V.data(), ap);
      att_tile.add(o);
      attend_rows(rows, K16.data(), V16.data(), ap);
      att_tile.add(o);
      attend_rows(rows, K8.data(), V8.data(), ap);
      att_tile.add(o);
    }
  const struct {
    const char* name;
    const Hash& h;
  } all[] = {{"attention_decode", att_dec},
             {"attention_tile", att_tile},
             {"dot", dot},
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
