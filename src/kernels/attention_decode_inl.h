// One-position attention (decode) with the keys across the vector lanes, written once over the
// vector abstraction of kernels/attention_tile_inl.h (include only from the files that instantiate
// it: kernels/attention.cc for the portable lanes, kernels/x86/attention_*.cc for AVX2 and AVX-512).
//
// The nq query heads of one kv head at one position see the same keys (one range, no mask), so a
// tile of query rows would fill under half a vector. Here a vector holds L consecutive keys instead:
// the scores of L keys for head g are L dot products over the head, each an accumulator of
// lane-wise FMAs (the K rows in their cache layout, loaded at the same column), folded into one
// vector of L scores by a transpose-and-add (V::fold4, V::fold_groups) -- no transposed K, no gather. An
// online softmax per head runs over blocks of keys (the block max and sum elementwise over the
// score vectors, one horizontal max and sum per head and block), and the output accumulates
// o_g += p_g[j] V_j with the probabilities broadcast, heads in register blocks sharing each V load.
// K and V are read once per block (fp16 widened, int8 dequantized into L1 scratch first); the block of one kv
// head's K then V stays in L1 while every query head of the group uses it.
//
// V provides, beyond attention_tile_inl.h's list: load_partial(p, n) (lanes >= n zero, nothing read
// there), store_partial(p, x, n) (lanes < n only), fold4(R a[4]) and fold_groups(R z[kLanes / 4])
// (lane j of fold_groups(z) = the sum of the lanes of a_j, z[g] = fold4(a_{4g .. 4g + 3}); fold4's
// layout is the ISA's own), hmax(R), hsum(R), div(a, b), iota() (lane j = j), kDecodeHeads (query heads one
// register block of the output accumulation holds, at 2 vectors of columns each), kDecodeQRegs (the
// most full vectors of a head the scores keep q in registers for; 0: never).
#pragma once

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>

#include "kernels/attention_tile_inl.h"

namespace nbits::kernels::attn {

constexpr int kDecodeMaxHeads = 32;  // query heads of one call (the caller splits larger groups)
constexpr int64_t kDecodeMaxBlock = 64;

// exp(x) for x below this is taken as 0: never a subnormal probability or rescale (on x86 each
// subnormal result costs a microcode assist, ~100x the vector op, and the masked lanes of a tail
// block, -inf, would take it every block); exp(-80) = 1.8e-35 is far below the rounding of a sum
// holding exp(0) = 1.
constexpr float kExpFloor = -80.0f;

// Keys per block: a K block of 16 KiB at head 64 (under L1 with its V block), a multiple of 16.
inline int64_t decode_block(int64_t H) {
  return std::clamp<int64_t>(4096 / std::max<int64_t>(H, 1) / 16 * 16, 16, kDecodeMaxBlock);
}

struct Decode {
  int64_t H = 0;              // head size
  int64_t qstride = 0;        // between the rows of qs (>= H, a multiple of the lanes)
  int nq = 0;                 // query heads, <= kDecodeMaxHeads
  const float* qs = nullptr;  // [nq][qstride]: the scaled queries, zero past H
  float* o = nullptr;         // row g at o + g * os: the unnormalised output (zero on entry)
  int64_t os = 0;
  float* m = nullptr;      // [nq] out: the max score of each head
  float* l = nullptr;      // [nq] out: the sum of exp(score - m)
  float* alpha = nullptr;  // [nq] scratch: the rescale of a block
  float* s = nullptr;      // [nq][decode_block(H)] scratch: scores, then probabilities
  float* kb = nullptr;     // [kBlockFloats] scratch: a widened fp16 / int8 K block
  float* vb = nullptr;     // [kBlockFloats] scratch: a widened fp16 / int8 V block
  float softcap = 0.0f;
};

// The scores q . k_j of the L keys (or the first nk of them when Tail) at k + j * H, lane j.
// HC > 0: the head is HC full vectors (and rem = H - HC L < L columns more); q stays in registers
// and each key's dot product is one chain of FMAs along its row. HC = 0: any head, q loaded per
// column vector. Keys in groups of 4, each group folded at once.
template <class V, int HC, bool Tail>
[[gnu::always_inline]] inline typename V::R score_keys_lanes(const float* q, const float* k, int64_t H,
                                                             int nk) {
  using R = typename V::R;
  constexpr int L = V::kLanes;
  R z[L / 4];  // V::fold4 of each 4 keys' accumulators, as soon as they are done (few live registers)
  if constexpr (HC > 0) {
    const int rem = static_cast<int>(H - HC * L);
    R qr[HC + 1];
    for (int c = 0; c < HC; ++c) qr[c] = V::load(q + c * L);
    qr[HC] = rem ? V::load(q + HC * L) : V::zero();  // zero past H (q rows are padded)
    for (int j4 = 0; j4 < L; j4 += 4) {
      R a[4];
      for (int j = 0; j < 4; ++j) {
        if (Tail && j4 + j >= nk) {
          a[j] = V::zero();
          continue;
        }
        const float* kr = k + (j4 + j) * H;
        R x = V::mul(V::load(kr), qr[0]);
        for (int c = 1; c < HC; ++c) x = V::fmadd(V::load(kr + c * L), qr[c], x);
        if (rem) x = V::fmadd(V::load_partial(kr + HC * L, rem), qr[HC], x);
        a[j] = x;
      }
      z[j4 / 4] = V::fold4(a);
    }
  } else {
    for (int j4 = 0; j4 < L; j4 += 4) {
      R a[4];
      for (int j = 0; j < 4; ++j) a[j] = V::zero();
      int64_t c = 0;
      for (; c + L <= H; c += L) {
        const R qc = V::load(q + c);
        for (int j = 0; j < 4; ++j)
          if (!Tail || j4 + j < nk) a[j] = V::fmadd(V::load(k + (j4 + j) * H + c), qc, a[j]);
      }
      if (c < H) {
        const R qc = V::load(q + c);
        const int rem = static_cast<int>(H - c);
        for (int j = 0; j < 4; ++j)
          if (!Tail || j4 + j < nk) a[j] = V::fmadd(V::load_partial(k + (j4 + j) * H + c, rem), qc, a[j]);
      }
      z[j4 / 4] = V::fold4(a);
    }
  }
  return V::fold_groups(z);
}

// cap * tanh(x / cap) as cap * sign(x) (1 - t) / (1 + t), t = exp(-2 |x| / cap).
template <class V>
inline typename V::R softcap_lanes(typename V::R x, float cap) {
  using R = typename V::R;
  const R y = V::mul(x, V::set1(1.0f / cap));
  const R a = V::max(y, V::sub(V::zero(), y));
  const R t = V::exp(V::mul(a, V::set1(-2.0f)));
  const R th = V::div(V::sub(V::set1(1.0f), t), V::add(V::set1(1.0f), t));
  const R r = V::mul(th, V::set1(cap));
  return V::lt_select(y, V::zero(), V::sub(V::zero(), r), r);
}

// o_g[i0, i0 + IC L) = alpha_g o_g + sum_{j < nb} P[g][j] V[j][i0, ...) for the GC heads from g0;
// Tail (IC = 1): only the rem columns left.
template <class V, int GC, int IC, bool Tail>
inline void accumulate_heads(const float* vp, int64_t nb, int64_t H, int64_t i0, int rem, const Decode& d,
                             int g0, int64_t Bc) {
  using R = typename V::R;
  constexpr int L = V::kLanes;
  static_assert(!Tail || IC == 1);
  R acc[GC][IC];
  for (int g = 0; g < GC; ++g) {
    const R a = V::set1(d.alpha[g0 + g]);
    float* o = d.o + (g0 + g) * d.os + i0;
    for (int c = 0; c < IC; ++c) acc[g][c] = V::mul(Tail ? V::load_partial(o, rem) : V::load(o + c * L), a);
  }
  const float* P = d.s + g0 * Bc;
  for (int64_t j = 0; j < nb; ++j) {
    R x[IC];
    for (int c = 0; c < IC; ++c)
      x[c] = Tail ? V::load_partial(vp + j * H + i0, rem) : V::load(vp + j * H + i0 + c * L);
    for (int g = 0; g < GC; ++g) {
      const R p = V::set1(P[g * Bc + j]);
      for (int c = 0; c < IC; ++c) acc[g][c] = V::fmadd(p, x[c], acc[g][c]);
    }
  }
  for (int g = 0; g < GC; ++g) {
    float* o = d.o + (g0 + g) * d.os + i0;
    for (int c = 0; c < IC; ++c) {
      if (Tail)
        V::store_partial(o, acc[g][c], rem);
      else
        V::store(o + c * L, acc[g][c]);
    }
  }
}

template <class V, int GC>
inline void accumulate_block(const float* vp, int64_t nb, const Decode& d, int g0, int64_t Bc) {
  constexpr int L = V::kLanes;
  const int64_t H = d.H;
  int64_t i = 0;
  for (; i + 2 * L <= H; i += 2 * L) accumulate_heads<V, GC, 2, false>(vp, nb, H, i, 0, d, g0, Bc);
  for (; i + L <= H; i += L) accumulate_heads<V, GC, 1, false>(vp, nb, H, i, 0, d, g0, Bc);
  if (i < H) accumulate_heads<V, GC, 1, true>(vp, nb, H, i, static_cast<int>(H - i), d, g0, Bc);
}

// accumulate_block for gc (1..kDecodeHeads) heads from g0, the register block chosen at compile time.
template <class V, int GC = V::kDecodeHeads>
inline void accumulate_dispatch(int gc, const float* vp, int64_t nb, const Decode& d, int g0, int64_t Bc) {
  if constexpr (GC >= 1) {
    if (gc == GC) return accumulate_block<V, GC>(vp, nb, d, g0, Bc);
    accumulate_dispatch<V, GC - 1>(gc, vp, nb, d, g0, Bc);
  }
}

// Scores, block max, rescale and probabilities of every head of d over the nb keys at kp (a block).
template <class V, int HC>
void score_block(const Decode& d, const float* kp, int64_t nb, int64_t Bc) {
  using R = typename V::R;
  constexpr int L = V::kLanes;
  const int64_t H = d.H;
  const int nq = d.nq;
  const R ninf = V::set1(-INFINITY);
  // The block's scores x of head g (keys j .. j + L), capped, tail lanes masked, into s; bm = max.
  auto put = [&](int g, int64_t j, R x, R& bm) {
    if (d.softcap > 0.0f) x = softcap_lanes<V>(x, d.softcap);
    if (j + L > nb) x = V::lt_select(V::iota(), V::set1(static_cast<float>(nb - j)), x, ninf);
    V::store(d.s + g * Bc + j, x);
    bm = V::max(bm, x);
  };
  // The online softmax step of head g: rescale, probabilities (in place), sum.
  auto softmax = [&](int g, R bm) {
    float* s = d.s + g * Bc;
    const float mn = std::max(d.m[g], V::hmax(bm));
    const float a = d.m[g] - mn < kExpFloor ? 0.0f : std::exp(d.m[g] - mn);  // 0 at the first block
    d.alpha[g] = a;
    d.m[g] = mn;
    const R mv = V::set1(mn), lowest = V::set1(kExpFloor), zero = V::zero();
    R sum = zero;
    for (int64_t j = 0; j < nb; j += L) {
      const R x = V::sub(V::load(s + j), mv);
      const R e = V::lt_select(x, lowest, zero, V::exp(V::max(x, lowest)));
      V::store(s + j, e);
      sum = V::add(sum, e);
    }
    // One fused step on every ISA (GCC contracts a * b + c in the -mfma x86 files; arm64 keeps
    // contraction off), so the NEON and AVX2 kernels compute the same bits.
    d.l[g] = std::fma(d.l[g], a, V::hsum(sum));
  };
  for (int g = 0; g < nq; ++g) {
    const float* q = d.qs + g * d.qstride;
    R bm = ninf;
    int64_t j = 0;
    for (; j + L <= nb; j += L) put(g, j, score_keys_lanes<V, HC, false>(q, kp + j * H, H, L), bm);
    if (j < nb) put(g, j, score_keys_lanes<V, HC, true>(q, kp + j * H, H, static_cast<int>(nb - j)), bm);
    softmax(g, bm);
  }
}

// score_block with q in registers where the head's full vectors fit (V::kDecodeQRegs), else generic.
template <class V, int HC = V::kDecodeQRegs>
inline void score_dispatch(const Decode& d, const float* kp, int64_t nb, int64_t Bc) {
  if constexpr (HC >= 1) {
    if (d.H / V::kLanes == HC) return score_block<V, HC>(d, kp, nb, Bc);
    return score_dispatch<V, HC - 1>(d, kp, nb, Bc);
  } else {
    return score_block<V, 0>(d, kp, nb, Bc);
  }
}

// The nq heads of d over the n keys of K/V (rows of H values): d.o, d.m, d.l.
template <class V, typename T>
void run_decode(const Decode& d, const T* K, const T* Vr, int64_t n) {
  const int64_t H = d.H, Bc = decode_block(H);
  const int nq = d.nq;
  for (int g = 0; g < nq; ++g) {
    d.m[g] = -FLT_MAX;
    d.l[g] = 0.0f;
  }
  // Register blocks of heads for the output accumulation, as even as the block size allows.
  const int hblocks = (nq + V::kDecodeHeads - 1) / V::kDecodeHeads;
  for (int64_t j0 = 0; j0 < n; j0 += Bc) {
    const int64_t nb = std::min(Bc, n - j0);
    const float* kp = block_rows<V>(K, j0, nb, H, d.kb);
    const float* vp = block_rows<V>(Vr, j0, nb, H, d.vb);
    score_dispatch<V>(d, kp, nb, Bc);
    for (int b = 0, g0 = 0; b < hblocks; ++b) {
      const int gc = (nq - g0) / (hblocks - b);
      accumulate_dispatch<V>(gc, vp, nb, d, g0, Bc);
      g0 += gc;
    }
  }
}

struct DecodeKernels {
  void (*f32)(const Decode&, const float*, const float*, int64_t);
  void (*f16)(const Decode&, const uint16_t*, const uint16_t*, int64_t);
  void (*q8)(const Decode&, const int8_t*, const int8_t*, int64_t);
};

template <class V>
DecodeKernels decode_kernels() {
  return {run_decode<V, float>, run_decode<V, uint16_t>, run_decode<V, int8_t>};
}

}  // namespace nbits::kernels::attn
