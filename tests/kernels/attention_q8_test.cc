// The int8 KV cache (--kv-cache q8) in the attention kernels of every ISA built here: the row format
// (kernels::quantize_kv_q8_row, dequantize_kv_q8_row) exactly as defined; attend_rows, attend_decode,
// attend_group and their partials over int8 rows against the fp32 kernels on the dequantized rows
// (bitwise: both paths multiply code by scale once, then run the same fp32 code); and against a
// double-precision reference on the original, unquantized K/V within the bound int8 rounding allows.
//
// The bound (per case, rigorous): each stored value is within s/2 of the original, s = max|row| / 127
// the row's scale. A score q.k * scale then moves by at most d = scale * max over keys of
// sum_i |q_i| * s_k / 2 (softcap only shrinks it), so every softmax weight changes by a factor in
// [e^-2d, e^2d] and the output by at most (e^2d - 1) max|V|; the V rounding adds at most
// max_j s_vj / 2 <= max|V| / 254. Plus the fp32 kernels' own 2e-5 * max|ref|.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "attention_reference.h"
#include "kernels/attention.h"

namespace nbits::kernels {
namespace {

constexpr double kTol = 2e-5;  // the fp32 kernels' bound (attention_tile_test.cc)

// n rows of H floats -> n int8 rows, and the values those rows hold.
struct Q8 {
  std::vector<int8_t> rows;
  std::vector<float> deq;
  std::vector<float> scale;
};
Q8 quantize(const std::vector<float>& x, int64_t n, int64_t H) {
  Q8 q;
  q.rows.resize(static_cast<size_t>(n * kv_q8_row_bytes(H)));
  q.deq.resize(static_cast<size_t>(n * H));
  q.scale.resize(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    int8_t* r = q.rows.data() + j * kv_q8_row_bytes(H);
    quantize_kv_q8_row(x.data() + j * H, H, r);
    dequantize_kv_q8_row(r, H, q.deq.data() + j * H);
    std::memcpy(&q.scale[static_cast<size_t>(j)], r + H, 4);
  }
  return q;
}

TEST(KvQ8Row, QuantizesAsDefined) {
  std::mt19937 rng(3);
  for (int64_t H : {1, 17, 64, 128, 255}) {
    for (int rep = 0; rep < 20; ++rep) {
      auto x = rand_vec(H, rng, -3.0f, 3.0f);
      if (rep == 1) std::fill(x.begin(), x.end(), 0.0f);  // a zero row: scale 0, codes 0
      if (rep == 2) x[static_cast<size_t>(H / 2)] = -1e-30f;
      if (rep == 3)
        for (auto& v : x) v *= 1e6f;
      std::vector<int8_t> row(static_cast<size_t>(kv_q8_row_bytes(H)), 99);
      quantize_kv_q8_row(x.data(), H, row.data());
      float amax = 0.0f;
      for (float v : x) amax = std::max(amax, std::fabs(v));
      const float want_scale = amax / 127.0f;
      float scale;
      std::memcpy(&scale, row.data() + H, 4);
      ASSERT_EQ(scale, want_scale) << "H " << H << " rep " << rep;
      std::vector<float> back(static_cast<size_t>(H));
      dequantize_kv_q8_row(row.data(), H, back.data());
      for (int64_t i = 0; i < H; ++i) {
        const int want = want_scale > 0.0f ? static_cast<int>(std::round(x[i] / want_scale)) : 0;
        ASSERT_EQ(row[i], want) << "H " << H << " i " << i;
        ASSERT_GE(row[i], -127);
        ASSERT_EQ(back[i], static_cast<float>(row[i]) * scale);
        ASSERT_LE(std::fabs(back[i] - x[i]), 0.5f * scale * (1.0f + 1e-5f)) << "H " << H << " i " << i;
      }
      if (amax > 0.0f) {
        int extreme = 0;
        for (int64_t i = 0; i < H; ++i) extreme = std::max<int>(extreme, std::abs(row[i]));
        EXPECT_EQ(extreme, 127) << "the largest |x| maps to 127";
      }
    }
  }
}

// The int8 rounding bound of the header for query q over keys [lo, hi).
double rounding_bound(const float* q, const Q8& k, const Q8& v, int64_t lo, int64_t hi,
                      const AttentionParams& p, double vmax) {
  double qsum = 0, d = 0, sv = 0;
  for (int64_t i = 0; i < p.head_size; ++i) qsum += std::fabs(q[i]);
  for (int64_t j = lo; j < hi; ++j) {
    d = std::max(d, p.scale * qsum * k.scale[static_cast<size_t>(j)] / 2);
    sv = std::max(sv, double(v.scale[static_cast<size_t>(j)]) / 2);
  }
  return (std::exp(2 * d) - 1) * vmax + sv;
}

struct Case {
  int64_t n = 1, S = 1, G = 1, H = 64, window = 0;
  float softcap = 0.0f;
  bool smooth = false;
  int parts = 1;
  bool decode = false;  // attend_decode (S = 1) instead of attend_rows
};

std::string name(const Case& c) {
  return "n=" + std::to_string(c.n) + " S=" + std::to_string(c.S) + " G=" + std::to_string(c.G) +
         " H=" + std::to_string(c.H) + " W=" + std::to_string(c.window) +
         " cap=" + std::to_string(c.softcap) + " smooth=" + std::to_string(c.smooth) +
         " parts=" + std::to_string(c.parts) + " decode=" + std::to_string(c.decode);
}

struct Result {
  double kernel = 0;  // worst |q8 out - reference on the dequantized K/V| / max |ref|
  double ratio = 0;   // worst |q8 out - reference on the original K/V| / its rounding bound
  double rel = 0;     // worst |q8 out - reference on the original| / max|V|
};

// One case on the selected ISA: the int8 run, the fp32 run on the dequantized rows (must be equal),
// and both references.
Result run_case(const Case& c, std::mt19937& rng) {
  const int64_t H = c.H, rows = c.S * c.G, qs = H + 3, RB = kv_q8_row_bytes(H);
  AttentionParams p;
  p.head_size = H;
  p.scale = 1.0f / std::sqrt(static_cast<float>(H));
  p.softcap = c.softcap;
  p.smooth = c.smooth;
  const auto q = rand_vec(rows * qs, rng, -2.0f, 2.0f);
  const auto K = rand_vec(c.n * H, rng, -2.0f, 2.0f), V = rand_vec(c.n * H, rng, -1.0f, 1.0f);
  const Q8 k8 = quantize(K, c.n, H), v8 = quantize(V, c.n, H);
  double vmax = 0;
  for (float x : V) vmax = std::max(vmax, double(std::fabs(x)));
  std::vector<float> o8(static_cast<size_t>(rows * H)), o32(o8.size());
  std::vector<const float*> qp(rows);
  std::vector<float*> p8(rows), p32(rows);
  std::vector<int64_t> lo(rows), hi(rows);
  for (int64_t s = 0; s < c.S; ++s)
    for (int64_t g = 0; g < c.G; ++g) {
      const int64_t r = s * c.G + g;
      qp[r] = q.data() + r * qs;
      p8[r] = o8.data() + r * H;
      p32[r] = o32.data() + r * H;
      hi[r] = c.n - c.S + s + 1;
      lo[r] = c.window > 0 && hi[r] > c.window ? hi[r] - c.window : 0;
    }
  if (c.decode) {
    const int64_t start = lo[0], n = c.n - start;
    if (c.parts == 1) {
      attend_decode(q.data(), qs, c.G, k8.rows.data() + start * RB, v8.rows.data() + start * RB, n, p,
                    o8.data(), H);
      attend_decode(q.data(), qs, c.G, k8.deq.data() + start * H, v8.deq.data() + start * H, n, p, o32.data(),
                    H);
    } else {
      const int64_t pf = attention_part_floats(c.G, H);
      std::vector<float> part8(static_cast<size_t>(pf * c.parts)), part32(part8.size());
      int used = 0;
      for (int k = 0; k < c.parts; ++k) {
        const int64_t b = start + n * k / c.parts, e = start + n * (k + 1) / c.parts;
        if (e <= b) continue;
        attend_decode_partial(q.data(), qs, c.G, k8.rows.data() + b * RB, v8.rows.data() + b * RB, e - b, p,
                              part8.data() + used * pf);
        attend_decode_partial(q.data(), qs, c.G, k8.deq.data() + b * H, v8.deq.data() + b * H, e - b, p,
                              part32.data() + used * pf);
        ++used;
      }
      attention_merge(part8.data(), used, pf, c.G, p, p8.data());
      attention_merge(part32.data(), used, pf, c.G, p, p32.data());
    }
  } else {
    AttentionRows ar{qp.data(), p8.data(), lo.data(), hi.data(), rows};
    AttentionRows ar32{qp.data(), p32.data(), lo.data(), hi.data(), rows};
    if (c.parts == 1) {
      attend_rows(ar, k8.rows.data(), v8.rows.data(), p);
      attend_rows(ar32, k8.deq.data(), v8.deq.data(), p);
    } else {
      const int64_t pf = attention_part_floats(rows, H);
      std::vector<float> part8(static_cast<size_t>(pf * c.parts)), part32(part8.size());
      for (int k = 0; k < c.parts; ++k) {
        const int64_t b = c.n * k / c.parts, e = c.n * (k + 1) / c.parts;
        attend_rows_partial(ar, k8.rows.data(), v8.rows.data(), b, e, p, part8.data() + k * pf);
        attend_rows_partial(ar32, k8.deq.data(), v8.deq.data(), b, e, p, part32.data() + k * pf);
      }
      attention_merge(part8.data(), c.parts, pf, rows, p, p8.data());
      attention_merge(part32.data(), c.parts, pf, rows, p, p32.data());
    }
  }
  EXPECT_EQ(o8, o32) << "int8 rows differ from the fp32 kernel on the dequantized rows, " << name(c);
  Result res;
  double big = 0;
  std::vector<std::vector<double>> on_deq(rows), on_orig(rows);
  for (int64_t r = 0; r < rows; ++r) {
    on_deq[r] = reference(qp[r], k8.deq.data(), v8.deq.data(), lo[r], hi[r], p);
    on_orig[r] = reference(qp[r], K.data(), V.data(), lo[r], hi[r], p);
    for (double v : on_deq[r]) big = std::max(big, std::fabs(v));
  }
  for (int64_t r = 0; r < rows; ++r) {
    const double bound = rounding_bound(qp[r], k8, v8, lo[r], hi[r], p, vmax) + kTol * big;
    for (int64_t i = 0; i < H; ++i) {
      res.kernel = std::max(res.kernel, std::fabs(p8[r][i] - on_deq[r][i]) / std::max(big, 1e-30));
      const double e = std::fabs(p8[r][i] - on_orig[r][i]);
      res.ratio = std::max(res.ratio, e / bound);
      res.rel = std::max(res.rel, e / vmax);
    }
  }
  return res;
}

class AttentionQ8 : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (!attention_select_isa(GetParam()))
      GTEST_SKIP() << "the " << GetParam()
                   << " attention kernels are not built for or not supported by this CPU";
  }
  void TearDown() override { attention_select_isa("best"); }
};

void check_cases(bool decode, uint32_t seed, const char* isa) {
  std::mt19937 rng(seed);
  Result worst;
  int idx = 0;
  for (int64_t n : {1, 7, 33, 257, 1024, 4096})
    for (int64_t H : {64, 128, 17})
      for (int64_t G : {1, 2, 7}) {
        ++idx;
        if (n == 4096 && idx % 3 != 0) continue;  // a third of the longest contexts: time
        Case c;
        c.n = n;
        c.H = H;
        c.G = G;
        c.decode = decode;
        c.S = decode ? 1 : std::min<int64_t>(n, idx % 2 ? 5 : 35);
        if (!decode && n >= 1024) c.S = std::min<int64_t>(c.S, 5);
        c.window = idx % 4 == 1 ? std::max<int64_t>(1, n / 3) : (idx % 4 == 2 ? 50 : 0);
        c.softcap = idx % 5 == 3 ? 5.0f : 0.0f;
        c.smooth = idx % 7 == 2;
        c.parts = n >= 257 && idx % 3 == 1 ? 3 : 1;
        const Result r = run_case(c, rng);
        ASSERT_LE(r.kernel, kTol) << name(c);
        ASSERT_LE(r.ratio, 1.0) << name(c);
        worst.kernel = std::max(worst.kernel, r.kernel);
        worst.ratio = std::max(worst.ratio, r.ratio);
        worst.rel = std::max(worst.rel, r.rel);
      }
  std::printf(
      "[ %s ] q8 %s: vs the dequantized reference %.3g of max|ref| (bound %.3g); vs the original K/V "
      "%.3g of max|V|, at most %.3g of the int8 rounding bound\n",
      isa, decode ? "decode" : "tile", worst.kernel, kTol, worst.rel, worst.ratio);
}

TEST_P(AttentionQ8, TileMatchesReference) { check_cases(false, 51, GetParam()); }
TEST_P(AttentionQ8, DecodeMatchesReference) { check_cases(true, 53, GetParam()); }

INSTANTIATE_TEST_SUITE_P(Isa, AttentionQ8, ::testing::Values("scalar", "avx2", "avx512", "rvv", "neon"),
                         [](const ::testing::TestParamInfo<const char*>& i) { return std::string(i.param); });

// attend_group (heads above the tile buffers, NBITS_ATTENTION=group) and its partials over int8 rows:
// bitwise the fp32 path on the dequantized rows.
TEST(AttentionQ8Group, LikeDequantized) {
  std::mt19937 rng(57);
  for (int64_t n : {1, 33, 600})
    for (int64_t H : {64, 17, 512})
      for (int parts : {1, 3}) {
        const int64_t G = 7;
        AttentionParams p;
        p.head_size = H;
        p.scale = 1.0f / std::sqrt(static_cast<float>(H));
        const auto q = rand_vec(G * H, rng, -2.0f, 2.0f);
        const auto K = rand_vec(n * H, rng, -2.0f, 2.0f), V = rand_vec(n * H, rng, -1.0f, 1.0f);
        const Q8 k8 = quantize(K, n, H), v8 = quantize(V, n, H);
        std::vector<float> scratch(static_cast<size_t>(G * n)), o8(static_cast<size_t>(G * H)),
            o32(o8.size());
        if (parts == 1) {
          attend_group(q.data(), H, G, k8.rows.data(), v8.rows.data(), n, p, scratch.data(), o8.data(), H);
          attend_group(q.data(), H, G, k8.deq.data(), v8.deq.data(), n, p, scratch.data(), o32.data(), H);
        } else {
          const int64_t pf = attention_part_floats(G, H), RB = kv_q8_row_bytes(H);
          std::vector<float> a(static_cast<size_t>(pf * parts)), b(a.size());
          int used = 0;
          for (int k = 0; k < parts; ++k) {
            const int64_t j0 = n * k / parts, j1 = n * (k + 1) / parts;
            if (j1 <= j0) continue;
            attend_group_partial(q.data(), H, G, k8.rows.data() + j0 * RB, v8.rows.data() + j0 * RB, j1 - j0,
                                 p, scratch.data(), a.data() + used * pf);
            attend_group_partial(q.data(), H, G, k8.deq.data() + j0 * H, v8.deq.data() + j0 * H, j1 - j0, p,
                                 scratch.data(), b.data() + used * pf);
            ++used;
          }
          std::vector<float*> p8(G), p32(G);
          for (int64_t g = 0; g < G; ++g) p8[g] = o8.data() + g * H, p32[g] = o32.data() + g * H;
          attention_merge(a.data(), used, pf, G, p, p8.data());
          attention_merge(b.data(), used, pf, G, p, p32.data());
        }
        ASSERT_EQ(o8, o32) << "n " << n << " H " << H << " parts " << parts;
      }
}

}  // namespace
}  // namespace nbits::kernels
