// The flash-attention kernel (kernels::attend_rows, attend_rows_partial + attention_merge) and the
// one-position decode kernel (kernels::attend_decode, attend_decode_partial) of every ISA built here
// against a straightforward double-precision reference: contexts 1..4096, query
// tiles of 1 to beyond the tile rows, 1..8 query heads per kv head, heads 17..256, causal rows with
// and without a local window, softcap, smooth softmax, per-row attention sinks, fp32 and fp16 caches.
//
// Tolerance: |out - ref| <= 2e-5 * max |ref| over the case (the reference runs on the same fp32 or
// fp16-widened K/V values, so the fp16 cache is held to the same bound).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "attention_reference.h"
#include "base/fp16.h"
#include "kernels/attention.h"
#if defined(NBITS_ARCH_RISCV)
#include "kernels/rvv/attention_rvv.h"
#endif

namespace nbits::kernels {
namespace {

constexpr double kTol = 2e-5;

struct Case {
  int64_t n = 1;   // keys in the cache (the context)
  int64_t S = 1;   // query positions: the last S of the context
  int64_t G = 1;   // query heads per kv head
  int64_t H = 64;  // head size
  int64_t window = 0;
  float softcap = 0.0f;
  bool smooth = false;
  bool sinks = false;  // a random sink logit per row (some above every score)
  bool f16 = false;
  float q_range = 2.0f;  // larger: peakier softmax (exercises the online rescaling)
  int parts = 1;         // > 1: attend_rows_partial over that many key ranges, then attention_merge
};

std::string name(const Case& c) {
  return "n=" + std::to_string(c.n) + " S=" + std::to_string(c.S) + " G=" + std::to_string(c.G) +
         " H=" + std::to_string(c.H) + " W=" + std::to_string(c.window) +
         " cap=" + std::to_string(c.softcap) + " smooth=" + std::to_string(c.smooth) +
         " sinks=" + std::to_string(c.sinks) + " f16=" + std::to_string(c.f16) +
         " parts=" + std::to_string(c.parts);
}

// Runs one case on the selected ISA; returns the worst error relative to max |ref|.
double run_case(const Case& c, std::mt19937& rng) {
  const int64_t H = c.H, rows = c.S * c.G, qs = H + 3;  // query rows wider than a head
  AttentionParams p;
  p.head_size = H;
  p.scale = 1.0f / std::sqrt(static_cast<float>(H));
  p.softcap = c.softcap;
  p.smooth = c.smooth;
  const auto sinks = rand_vec(rows, rng, -4.0f, 6.0f);
  if (c.sinks) p.sinks = sinks.data();
  const auto q = rand_vec(rows * qs, rng, -c.q_range, c.q_range);
  auto K = rand_vec(c.n * H, rng, -2.0f, 2.0f), V = rand_vec(c.n * H, rng, -1.0f, 1.0f);
  std::vector<uint16_t> K16(K.size()), V16(V.size());
  if (c.f16)
    for (size_t i = 0; i < K.size(); ++i) {
      K16[i] = float_to_fp16(K[i]);
      V16[i] = float_to_fp16(V[i]);
      K[i] = fp16_to_float(K16[i]);  // the reference sees the widened halves
      V[i] = fp16_to_float(V16[i]);
    }
  std::vector<float> out(static_cast<size_t>(rows * (H + 1)), 7.0f);
  std::vector<const float*> qp(rows);
  std::vector<float*> op(rows);
  std::vector<int64_t> lo(rows), hi(rows);
  for (int64_t s = 0; s < c.S; ++s)
    for (int64_t g = 0; g < c.G; ++g) {
      const int64_t r = s * c.G + g;
      qp[r] = q.data() + r * qs;
      op[r] = out.data() + r * (H + 1);
      hi[r] = c.n - c.S + s + 1;
      lo[r] = c.window > 0 && hi[r] > c.window ? hi[r] - c.window : 0;
    }
  AttentionRows ar;
  ar.q = qp.data();
  ar.out = op.data();
  ar.lo = lo.data();
  ar.hi = hi.data();
  ar.n = rows;
  if (c.parts == 1) {
    if (c.f16)
      attend_rows(ar, K16.data(), V16.data(), p);
    else
      attend_rows(ar, K.data(), V.data(), p);
  } else {
    const int64_t pf = attention_part_floats(rows, H);
    std::vector<float> parts(static_cast<size_t>(pf * c.parts));
    for (int k = 0; k < c.parts; ++k) {
      const int64_t b = c.n * k / c.parts, e = c.n * (k + 1) / c.parts;
      if (c.f16)
        attend_rows_partial(ar, K16.data(), V16.data(), b, e, p, parts.data() + k * pf);
      else
        attend_rows_partial(ar, K.data(), V.data(), b, e, p, parts.data() + k * pf);
    }
    attention_merge(parts.data(), c.parts, pf, rows, p, op.data());
  }
  double worst = 0.0, big = 0.0;
  std::vector<std::vector<double>> want(rows);
  for (int64_t r = 0; r < rows; ++r) {
    want[r] = reference(qp[r], K.data(), V.data(), lo[r], hi[r], p, r);
    for (double v : want[r]) big = std::max(big, std::fabs(v));
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < H; ++i) worst = std::max(worst, std::fabs(op[r][i] - want[r][i]));
    EXPECT_EQ(op[r][H], 7.0f) << "gap after row " << r << " written, " << name(c);
  }
  return worst / std::max(big, 1e-30);
}

class AttentionTile : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (!attention_select_isa(GetParam()))
      GTEST_SKIP() << "the " << GetParam() << " attention tile is not built for or not supported by this CPU";
  }
  void TearDown() override { attention_select_isa("best"); }
};

TEST_P(AttentionTile, MatchesReferenceAcrossContexts) {
  std::mt19937 rng(11);
  double worst = 0.0;
  const int64_t heads[] = {64, 80, 96, 128, 256, 17};
  const int64_t groups[] = {1, 2, 3, 7, 8};
  int idx = 0;
  for (int64_t n : {1, 2, 7, 63, 64, 65, 300, 1024, 4096})
    for (int64_t H : heads)
      for (int64_t G : groups) {
        ++idx;
        Case c;
        c.n = n;
        c.H = H;
        c.G = G;
        // Query positions: one (decode), a few, or beyond a tile (prefill of the whole context when
        // it is short, the last positions of a long one).
        const int64_t want_s[] = {1, 5, 35};
        c.S = std::min<int64_t>(n, want_s[idx % 3]);
        if (n >= 1024 && (H >= 128 || G >= 7)) c.S = std::min<int64_t>(c.S, 5);
        c.window = idx % 4 == 1 ? std::max<int64_t>(1, n / 3) : (idx % 4 == 2 ? 50 : 0);
        c.softcap = idx % 5 == 3 ? 5.0f : 0.0f;
        c.smooth = idx % 7 == 2;
        c.sinks = idx % 7 == 5;
        c.f16 = idx % 2 == 1;
        c.q_range = idx % 6 == 4 ? 12.0f : 2.0f;
        const double err = run_case(c, rng);
        ASSERT_LE(err, kTol) << name(c);
        worst = std::max(worst, err);
      }
  std::printf("[ %s ] worst error / max |ref|: %.3g (bound %.3g)\n", GetParam(), worst, kTol);
}

TEST_P(AttentionTile, PartialsMergeLikeOnePass) {
  std::mt19937 rng(23);
  int idx = 0;
  for (int64_t n : {1, 7, 65, 300, 1024, 4096})
    for (int parts : {2, 3, 5})
      for (int64_t G : {1, 7, 8}) {
        ++idx;
        Case c;
        c.n = n;
        c.G = G;
        c.H = idx % 3 == 0 ? 128 : 64;
        c.parts = parts;
        c.S = idx % 4 == 0 ? std::min<int64_t>(n, 3) : 1;
        c.window = idx % 5 == 1 ? std::max<int64_t>(1, n / 4) : 0;  // some parts see nothing
        c.softcap = idx % 6 == 2 ? 5.0f : 0.0f;
        c.smooth = idx % 3 == 1;
        c.sinks = idx % 3 == 2;
        c.f16 = idx % 2 == 0;
        const double err = run_case(c, rng);
        ASSERT_LE(err, kTol) << name(c);
      }
}

// Causal rows that all start at key 0 give the same bits whichever rows share their tile: the key
// blocks start at 0 for every tile, and keys past a row's end are masked to an exact 0. The op
// cuts a kv head's (position, head) rows into whole tiles that end inside a position, so a row's
// result must not depend on that cut.
TEST_P(AttentionTile, RowsDoNotDependOnTheirTileMates) {
  std::mt19937 rng(31);
  const int64_t G = 7, S = 9, n = 300, H = 64, rows = S * G;
  AttentionParams p;
  p.head_size = H;
  p.scale = 0.125f;
  const auto q = rand_vec(rows * H, rng, -2.0f, 2.0f);
  const auto K = rand_vec(n * H, rng, -2.0f, 2.0f), V = rand_vec(n * H, rng, -1.0f, 1.0f);
  std::vector<float> flat(rows * H), alone(rows * H);
  std::vector<const float*> qp(rows);
  std::vector<float*> pf(rows), pa(rows);
  std::vector<int64_t> lo(rows, 0), hi(rows);
  for (int64_t r = 0; r < rows; ++r) {
    qp[r] = q.data() + r * H;
    pf[r] = flat.data() + r * H;
    pa[r] = alone.data() + r * H;
    hi[r] = n - S + r / G + 1;
  }
  attend_rows(AttentionRows{qp.data(), pf.data(), lo.data(), hi.data(), rows}, K.data(), V.data(), p);
  for (int64_t s = 0; s < S; ++s)  // one position's G heads per call
    attend_rows(AttentionRows{qp.data() + s * G, pa.data() + s * G, lo.data() + s * G, hi.data() + s * G, G},
                K.data(), V.data(), p);
  ASSERT_EQ(flat, alone);
}

// fp16 cache: exactly what the fp32 kernel computes on the widened rows.
TEST_P(AttentionTile, Fp16CacheBitwiseLikeWidened) {
  std::mt19937 rng(5);
  for (int64_t n : {1, 63, 300})
    for (int64_t H : {64, 80, 17}) {
      const int64_t rows = 7;
      AttentionParams p;
      p.head_size = H;
      p.scale = 0.125f;
      const auto q = rand_vec(rows * H, rng, -2.0f, 2.0f);
      auto K = rand_vec(n * H, rng, -2.0f, 2.0f), V = rand_vec(n * H, rng, -1.0f, 1.0f);
      std::vector<uint16_t> K16(K.size()), V16(V.size());
      for (size_t i = 0; i < K.size(); ++i) {
        K16[i] = float_to_fp16(K[i]);
        V16[i] = float_to_fp16(V[i]);
        K[i] = fp16_to_float(K16[i]);
        V[i] = fp16_to_float(V16[i]);
      }
      std::vector<float> o16(rows * H), o32(rows * H);
      std::vector<const float*> qp(rows);
      std::vector<float*> p16(rows), p32(rows);
      std::vector<int64_t> lo(rows, 0), hi(rows, n);
      for (int64_t r = 0; r < rows; ++r) {
        qp[r] = q.data() + r * H;
        p16[r] = o16.data() + r * H;
        p32[r] = o32.data() + r * H;
      }
      AttentionRows ar{qp.data(), p16.data(), lo.data(), hi.data(), rows};
      attend_rows(ar, K16.data(), V16.data(), p);
      ar.out = p32.data();
      attend_rows(ar, K.data(), V.data(), p);
      ASSERT_EQ(o16, o32) << "n " << n << " H " << H;
    }
}

// Decode split across threads: attend_group_partial over consecutive key ranges + attention_merge.
TEST(AttentionDecode, GroupPartialsMergeLikeReference) {
  std::mt19937 rng(31);
  int idx = 0;
  for (int64_t n : {1, 2, 600, 4096})
    for (int parts : {1, 2, 3})
      for (int64_t G : {1, 7, 8}) {
        ++idx;
        const int64_t H = idx % 3 == 0 ? 128 : 64;
        AttentionParams p;
        p.head_size = H;
        p.scale = 1.0f / std::sqrt(static_cast<float>(H));
        p.softcap = idx % 4 == 1 ? 5.0f : 0.0f;
        p.smooth = idx % 3 == 2;
        const auto sinks = rand_vec(G, rng, -4.0f, 6.0f);
        if (idx % 3 == 1) p.sinks = sinks.data();
        const bool f16 = idx % 2 == 0;
        const auto q = rand_vec(G * H, rng, -3.0f, 3.0f);
        auto K = rand_vec(n * H, rng, -2.0f, 2.0f), V = rand_vec(n * H, rng, -1.0f, 1.0f);
        std::vector<uint16_t> K16(K.size()), V16(V.size());
        for (size_t i = 0; i < K.size(); ++i) {
          K16[i] = float_to_fp16(K[i]);
          V16[i] = float_to_fp16(V[i]);
          if (f16) {
            K[i] = fp16_to_float(K16[i]);
            V[i] = fp16_to_float(V16[i]);
          }
        }
        const int64_t pf = attention_part_floats(G, H);
        std::vector<float> part(static_cast<size_t>(pf * parts)), scratch(static_cast<size_t>(G * n)),
            out(static_cast<size_t>(G * H));
        int used = 0;
        for (int k = 0; k < parts; ++k) {
          const int64_t b = n * k / parts, e = n * (k + 1) / parts;
          if (e <= b) continue;
          float* pp = part.data() + used++ * pf;
          if (f16)
            attend_group_partial(q.data(), H, G, K16.data() + b * H, V16.data() + b * H, e - b, p,
                                 scratch.data(), pp);
          else
            attend_group_partial(q.data(), H, G, K.data() + b * H, V.data() + b * H, e - b, p, scratch.data(),
                                 pp);
        }
        std::vector<float*> op(G);
        for (int64_t g = 0; g < G; ++g) op[g] = out.data() + g * H;
        attention_merge(part.data(), used, pf, G, p, op.data());
        double worst = 0, big = 0;
        for (int64_t g = 0; g < G; ++g) {
          const auto want = reference(q.data() + g * H, K.data(), V.data(), 0, n, p, g);
          for (int64_t i = 0; i < H; ++i) {
            worst = std::max(worst, std::fabs(op[g][i] - want[i]));
            big = std::max(big, std::fabs(want[i]));
          }
        }
        ASSERT_LE(worst / big, kTol) << "n " << n << " parts " << parts << " G " << G << " H " << H;
      }
}

// The one-position kernel with the keys across the lanes (kernels::attend_decode, and its partials
// + attention_merge) of every ISA: contexts 1..4096 (a fixed list and random ones), the range a
// window leaves (the op passes K/V from the window's first key), softcap, smooth softmax, 1..40
// query heads per kv head (above kAttentionDecodeHeads: two calls' worth), heads 64/128 and odd
// ones, fp32 and fp16 caches, output rows with a gap between them (never written).
struct DecodeCase {
  int64_t n = 1, G = 1, H = 64, window = 0;
  float softcap = 0.0f, q_range = 2.0f;
  bool smooth = false, sinks = false, f16 = false;
  int parts = 1;
};

std::string name(const DecodeCase& c) {
  return "n=" + std::to_string(c.n) + " G=" + std::to_string(c.G) + " H=" + std::to_string(c.H) +
         " W=" + std::to_string(c.window) + " cap=" + std::to_string(c.softcap) +
         " smooth=" + std::to_string(c.smooth) + " sinks=" + std::to_string(c.sinks) +
         " f16=" + std::to_string(c.f16) + " parts=" + std::to_string(c.parts) +
         " q=" + std::to_string(c.q_range);
}

double run_decode_case(const DecodeCase& c, std::mt19937& rng) {
  const int64_t H = c.H, G = c.G, qs = H + 5, os = H + 1;
  AttentionParams p;
  p.head_size = H;
  p.scale = 1.0f / std::sqrt(static_cast<float>(H));
  p.softcap = c.softcap;
  p.smooth = c.smooth;
  const auto sinks = rand_vec(G, rng, -4.0f, 6.0f);
  if (c.sinks) p.sinks = sinks.data();
  const auto q = rand_vec(G * qs, rng, -c.q_range, c.q_range);
  auto K = rand_vec(c.n * H, rng, -2.0f, 2.0f), V = rand_vec(c.n * H, rng, -1.0f, 1.0f);
  std::vector<uint16_t> K16(K.size()), V16(V.size());
  if (c.f16)
    for (size_t i = 0; i < K.size(); ++i) {
      K16[i] = float_to_fp16(K[i]);
      V16[i] = float_to_fp16(V[i]);
      K[i] = fp16_to_float(K16[i]);
      V[i] = fp16_to_float(V16[i]);
    }
  const int64_t start = c.window > 0 && c.n > c.window ? c.n - c.window : 0, n = c.n - start;
  std::vector<float> out(static_cast<size_t>(G * os), 7.0f);
  std::vector<float*> op(G);
  for (int64_t g = 0; g < G; ++g) op[g] = out.data() + g * os;
  if (c.parts == 1) {
    if (c.f16)
      attend_decode(q.data(), qs, G, K16.data() + start * H, V16.data() + start * H, n, p, out.data(), os);
    else
      attend_decode(q.data(), qs, G, K.data() + start * H, V.data() + start * H, n, p, out.data(), os);
  } else {
    const int64_t pf = attention_part_floats(G, H);
    std::vector<float> part(static_cast<size_t>(pf * c.parts));
    int used = 0;
    for (int k = 0; k < c.parts; ++k) {
      const int64_t b = start + n * k / c.parts, e = start + n * (k + 1) / c.parts;
      if (e <= b) continue;
      float* pp = part.data() + used++ * pf;
      if (c.f16)
        attend_decode_partial(q.data(), qs, G, K16.data() + b * H, V16.data() + b * H, e - b, p, pp);
      else
        attend_decode_partial(q.data(), qs, G, K.data() + b * H, V.data() + b * H, e - b, p, pp);
    }
    attention_merge(part.data(), used, pf, G, p, op.data());
  }
  double worst = 0.0, big = 0.0;
  for (int64_t g = 0; g < G; ++g) {
    const auto want = reference(q.data() + g * qs, K.data(), V.data(), start, c.n, p, g);
    for (int64_t i = 0; i < H; ++i) {
      worst = std::max(worst, std::fabs(op[g][i] - want[i]));
      big = std::max(big, std::fabs(want[i]));
    }
    EXPECT_EQ(op[g][H], 7.0f) << "gap after head " << g << " written, " << name(c);
  }
  return worst / std::max(big, 1e-30);
}

TEST_P(AttentionTile, DecodeLanesMatchReference) {
  std::mt19937 rng(41);
  double worst = 0.0;
  int idx = 0;
  std::vector<int64_t> contexts = {1,  2,  3,  7,  8,   9,   15,  16,   17,  31,
                                   33, 63, 64, 65, 127, 129, 300, 1000, 4096};
  std::uniform_int_distribution<int64_t> ctx(1, 4096);
  for (int i = 0; i < 8; ++i) contexts.push_back(ctx(rng));
  for (int64_t n : contexts)
    for (int64_t H : {64, 128, 17, 80, 33})
      for (int64_t G : {1, 2, 7}) {
        ++idx;
        DecodeCase c;
        c.n = n;
        c.H = H;
        c.G = G;
        c.window = idx % 4 == 1 ? std::max<int64_t>(1, n / 3) : (idx % 4 == 2 ? 50 : 0);
        c.softcap = idx % 3 == 1 ? (idx % 2 ? 5.0f : 50.0f) : 0.0f;
        c.smooth = idx % 7 == 2;
        c.sinks = idx % 7 == 4;
        c.f16 = idx % 2 == 1;
        c.q_range = idx % 5 == 4 ? 12.0f : 2.0f;
        const double err = run_decode_case(c, rng);
        ASSERT_LE(err, kTol) << name(c);
        worst = std::max(worst, err);
      }
  // Wider groups (several register blocks; above kAttentionDecodeHeads: two calls), long heads.
  for (int64_t G : {3, 5, 8, 9, 13, 16, 33, 40})
    for (int64_t H : {64, 96, 256, 512}) {
      ++idx;
      DecodeCase c;
      c.n = idx % 3 == 0 ? 700 : 77;
      c.G = G;
      c.H = H;
      c.softcap = idx % 4 == 1 ? 5.0f : 0.0f;
      c.sinks = idx % 3 == 1;
      c.f16 = idx % 2 == 0;
      const double err = run_decode_case(c, rng);
      ASSERT_LE(err, kTol) << name(c);
      worst = std::max(worst, err);
    }
  std::printf("[ %s ] decode: worst error / max |ref|: %.3g (bound %.3g)\n", GetParam(), worst, kTol);
}

TEST_P(AttentionTile, DecodeLanesPartialsMergeLikeOnePass) {
  std::mt19937 rng(43);
  int idx = 0;
  for (int64_t n : {1, 7, 65, 600, 1024, 4096})
    for (int parts : {2, 3, 5})
      for (int64_t G : {1, 2, 7}) {
        ++idx;
        DecodeCase c;
        c.n = n;
        c.G = G;
        c.H = idx % 3 == 0 ? 128 : 64;
        c.parts = parts;
        c.window = idx % 5 == 1 ? std::max<int64_t>(1, n / 4) : 0;
        c.softcap = idx % 6 == 2 ? 5.0f : 0.0f;
        c.smooth = idx % 3 == 1;
        c.sinks = idx % 3 == 2;
        c.f16 = idx % 2 == 0;
        const double err = run_decode_case(c, rng);
        ASSERT_LE(err, kTol) << name(c);
      }
}

// fp16 cache: exactly what the fp32 decode kernel computes on the widened rows.
TEST_P(AttentionTile, DecodeLanesFp16BitwiseLikeWidened) {
  std::mt19937 rng(47);
  for (int64_t n : {1, 63, 300})
    for (int64_t H : {64, 80, 17}) {
      const int64_t G = 7;
      AttentionParams p;
      p.head_size = H;
      p.scale = 0.125f;
      const auto q = rand_vec(G * H, rng, -2.0f, 2.0f);
      auto K = rand_vec(n * H, rng, -2.0f, 2.0f), V = rand_vec(n * H, rng, -1.0f, 1.0f);
      std::vector<uint16_t> K16(K.size()), V16(V.size());
      for (size_t i = 0; i < K.size(); ++i) {
        K16[i] = float_to_fp16(K[i]);
        V16[i] = float_to_fp16(V[i]);
        K[i] = fp16_to_float(K16[i]);
        V[i] = fp16_to_float(V16[i]);
      }
      std::vector<float> o16(G * H), o32(G * H);
      attend_decode(q.data(), H, G, K16.data(), V16.data(), n, p, o16.data(), H);
      attend_decode(q.data(), H, G, K.data(), V.data(), n, p, o32.data(), H);
      ASSERT_EQ(o16, o32) << "n " << n << " H " << H;
    }
}

INSTANTIATE_TEST_SUITE_P(Isa, AttentionTile, ::testing::Values("scalar", "avx2", "avx512", "rvv", "neon"),
                         [](const ::testing::TestParamInfo<const char*>& i) { return std::string(i.param); });

TEST(AttentionTileDispatch, ReportsAnIsa) {
  const std::string isa = attention_isa();
  EXPECT_TRUE(isa == "avx512" || isa == "avx2" || isa == "rvv" || isa == "neon" || isa == "scalar") << isa;
#if defined(NBITS_ARCH_ARM64)
  EXPECT_EQ(isa, "neon");
#endif
#if defined(NBITS_ARCH_RISCV)
  // RVV with VLEN 256 (QEMU's -cpu of tools/riscv/test.sh, the K1) runs the RVV kernels.
  EXPECT_EQ(isa, attention_rvv_supported() ? "rvv" : "scalar");
#endif
  EXPECT_GE(attention_tile_rows(), 16);
  EXPECT_LE(attention_tile_rows(), kAttentionMaxTileRows);
}

}  // namespace
}  // namespace nbits::kernels
